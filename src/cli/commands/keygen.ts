import { writeFile } from 'node:fs/promises';
import { UsageError } from '../../base/errors.js';
import { generateSigningKey } from '../../trust/signature.js';
import type { Invocation } from '../args.js';
import type { OptionsOf } from './options.js';
import type { CommandResult } from './result.js';

/** `keygen --out NAME`: NAME.key (0600, never overwritten) and NAME.pub for /etc/sno-relocate/trust/. */
export async function keygenCommand(inv: Invocation<OptionsOf<'keygen'>>): Promise<CommandResult> {
  const out = inv.flags.out;
  if (!out) throw new UsageError('keygen needs --out NAME (writes NAME.key and NAME.pub)');
  if (inv.positionals.length) throw new UsageError('keygen takes no PATH');
  const pair = generateSigningKey();
  try {
    // exclusive: an existing private key is never replaced by accident
    await writeFile(`${out}.key`, pair.privatePem, { mode: 0o600, flag: 'wx' });
    await writeFile(`${out}.pub`, pair.publicPem, { mode: 0o644, flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST')
      throw new UsageError(`${(err as NodeJS.ErrnoException).path} exists; choose another --out NAME`);
    throw err;
  }
  return { exitCode: 0, stdout: `wrote ${out}.key (private, keep it offline) and ${out}.pub (key ${pair.keyId})\n` };
}
