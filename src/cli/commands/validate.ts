import { formatFinding } from '../../config/findings.js';
import { atMostOnePath, type Invocation, oneOf } from '../args.js';
import { createRuntime, loadSite } from '../runtime.js';
import type { CommandResult } from './result.js';

export async function validateCommand(inv: Invocation): Promise<CommandResult> {
  const rt = createRuntime(inv.flags);
  const format = oneOf('-o', inv.flags.output, ['text', 'json'] as const, 'text');
  const loaded = await loadSite(rt, atMostOnePath('validate', inv.positionals));
  if (!loaded) return { exitCode: 0, stdout: 'no site-config found: nothing to validate\n' };
  const stdout =
    format === 'json'
      ? `${JSON.stringify({ valid: true, site: loaded.site.name, files: loaded.files, findings: loaded.findings }, null, 2)}\n`
      : [
          ...loaded.findings.map(formatFinding),
          `site-config valid: site ${loaded.site.name}, ${loaded.files.length} file(s) read`,
        ].join('\n') + '\n';
  return { exitCode: 0, stdout };
}
