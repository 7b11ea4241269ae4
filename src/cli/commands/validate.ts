import yaml from 'js-yaml';
import { formatFinding } from '../../base/findings.js';
import { translationRecord } from '../../config/ibi/translation.js';
import type { LoadedSite } from '../../config/site.js';
import { redactSecrets } from '../../log/redact.js';
import { atMostOnePath, type Invocation, oneOf } from '../args.js';
import type { OptionsOf } from './options.js';
import { createRuntime, loadSite } from '../runtime.js';
import type { CommandResult } from './result.js';

/**
 * `validate --translate`: the native site-config the input became (for config media, what
 * manifest.json was translated into), and for media a record of every field it gave and what each
 * became (`translation`, also those with no native field: identity, admin CA, signers, unused
 * keys). Registry credentials are redacted: stdout is a terminal or a log as often as a file.
 */
function translated(loaded: LoadedSite, format: 'text' | 'json' | 'yaml'): string {
  const media = loaded.site.imageBased;
  const document = redactSecrets({
    ...(loaded.document as object),
    ...(media && { translation: translationRecord(media) }),
  });
  if (format === 'json') return `${JSON.stringify(document, null, 2)}\n`;
  const from = media
    ? 'translated from the image-based install config media; `translation` records what each field of manifest.json became and is no site-config field'
    : 'as read';
  return `# native site-config ${from} at ${loaded.dir}; registry credentials redacted\n${yaml.dump(document, { lineWidth: 120, noRefs: true })}`;
}

export async function validateCommand(inv: Invocation<OptionsOf<'validate'>>): Promise<CommandResult> {
  const rt = createRuntime(inv.flags);
  const format = oneOf(
    '-o',
    inv.flags.output,
    ['text', 'json', 'yaml'] as const,
    inv.flags.translate ? 'yaml' : 'text',
  );
  const loaded = await loadSite(rt, atMostOnePath('validate', inv.positionals));
  if (!loaded) return { exitCode: 0, stdout: 'no site-config found: nothing to validate\n' };
  if (inv.flags.translate) return { exitCode: 0, stdout: translated(loaded, format) };
  const summary = {
    valid: true,
    site: loaded.site.name,
    media: loaded.media,
    files: loaded.files,
    findings: loaded.findings,
  };
  const stdout =
    format === 'json'
      ? `${JSON.stringify(summary, null, 2)}\n`
      : format === 'yaml'
        ? yaml.dump(summary, { lineWidth: 120 })
        : [
            ...loaded.findings.map(formatFinding),
            `site-config valid: site ${loaded.site.name}, ${loaded.files.length} file(s) read${loaded.media === 'ibi' ? ' (image-based install config media)' : ''}`,
          ].join('\n') + '\n';
  return { exitCode: 0, stdout };
}
