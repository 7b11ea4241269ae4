/** docs/image-based-media.md carries the field table as the agent has it (regenerate: see media-doc.ts). */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { FIELD_TABLE } from '../../src/config/ibi/field-table.js';
import { REPO } from '../helpers/cli.js';
import { mediaFieldTable } from './media-doc.js';

describe('docs/image-based-media.md', () => {
  it('holds the manifest.json field table of the agent, every field with its use and reason', () => {
    const doc = readFileSync(path.join(REPO, 'docs/image-based-media.md'), 'utf8');
    const table = /<!-- media field table[^>]*-->\n([\s\S]*?)\n<!-- end of media field table -->/.exec(doc)?.[1];
    expect(table).toBe(mediaFieldTable(FIELD_TABLE));
  });
});
