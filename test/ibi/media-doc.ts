/**
 * The manifest.json field table of docs/image-based-media.md, rendered from the agent's own table.
 * Regenerate with: npx tsx -e "import { FIELD_TABLE } from './src/config/ibi/field-table.ts';
 * import { mediaFieldTable } from './test/ibi/media-doc.ts'; console.log(mediaFieldTable(FIELD_TABLE))"
 */
import type { FieldRow } from '../../src/config/ibi/field-table.js';

const cell = (text: string) => text.replace(/\|/g, '\\|');

export function mediaFieldTable(rows: readonly FieldRow[]): string {
  return [
    '| manifest.json field | use | where it goes | why |',
    '| --- | --- | --- | --- |',
    ...rows.map((r) => `| \`${r.field}\` | ${r.use} | ${r.native ? `\`${cell(r.native)}\`` : ''} | ${cell(r.note)} |`),
  ].join('\n');
}
