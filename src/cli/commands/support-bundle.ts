import { UsageError } from '../../base/errors.js';
import { writeSupportBundle } from '../../support/bundle.js';
import type { Invocation } from '../args.js';
import type { OptionsOf } from './options.js';
import { createRuntime } from '../runtime.js';
import type { CommandResult } from './result.js';
import { statusCommand } from './status.js';

/** `support-bundle --out FILE.tar.gz`: one archive of what support asks for, redacted (support/bundle.ts). */
export async function supportBundleCommand(inv: Invocation<OptionsOf<'support-bundle'>>): Promise<CommandResult> {
  const out = inv.flags.out;
  if (!out) throw new UsageError('support-bundle needs --out FILE.tar.gz');
  if (inv.positionals.length) throw new UsageError('support-bundle takes no PATH');
  const rt = createRuntime(inv.flags);
  // status as the technician would see it: a damaged state file is said, not a reason to give up
  const status = async () => {
    const as = (output: string) => statusCommand({ ...inv, command: 'status', flags: { ...inv.flags, output } });
    return { text: (await as('text')).stdout, json: (await as('json')).stdout };
  };
  const result = await writeSupportBundle(
    { fs: rt.fs, exec: rt.exec, stateDir: rt.stateDir, status, now: () => performance.now() },
    out,
  );
  const cut = result.notes.length ? `; ${result.notes.length} note(s) in MANIFEST.txt` : '';
  return {
    exitCode: 0,
    stdout: `wrote ${out}: ${result.entries.length} entries, ${Math.ceil(result.bytes / 1024)} KiB before compression${cut}\n`,
  };
}
