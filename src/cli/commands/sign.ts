import type { KeyObject } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { admitSite, offNode } from '../../config/admit.js';
import { systemClock } from '../../ports/clock.js';
import { UsageError } from '../../base/errors.js';
import { createRootFs } from '../../ports/fs.js';
import { sealAndSign } from '../../trust/seal-folder.js';
import { KeyError, readPrivateKey, SIGNATURE_FILE } from '../../trust/signature.js';
import { AGE_RECIPIENT } from '../../trust/node-key.js';
import type { Invocation } from '../args.js';
import type { OptionsOf } from './options.js';
import type { CommandResult } from './result.js';

function date(flag: string, value: string): Date {
  const at = new Date(value);
  if (Number.isNaN(at.getTime()))
    throw new UsageError(`${flag}: "${value}" is not a date (for example 2027-03-31 or 2027-03-31T18:00:00Z)`);
  return at;
}

/** --not-after: a date still ahead. */
export function expiryFlag(notAfter: string | undefined): Date | undefined {
  const expiry = notAfter ? date('--not-after', notAfter) : undefined;
  if (expiry && expiry.getTime() <= Date.now()) throw new UsageError(`--not-after: ${notAfter} is already past`);
  return expiry;
}

/** --key: a private signing key made by keygen. */
export async function signingKeyFlag(key: string): Promise<KeyObject> {
  try {
    return readPrivateKey(await readFile(key, 'utf8'), key);
  } catch (err) {
    if (err instanceof KeyError) throw new UsageError(err.message);
    throw new UsageError(`--key: cannot read ${key}: ${(err as Error).message}`);
  }
}

/** --node-key: an age X25519 recipient, as factory prepare prints it. */
export function nodeKeyFlag(value: string | undefined): string | undefined {
  if (value !== undefined && !AGE_RECIPIENT.test(value))
    throw new UsageError(`--node-key: "${value}" is not an age recipient (age1..., printed by factory prepare)`);
  return value;
}

/**
 * `sign --key NAME.key [--not-after DATE] [--bind-machine-id ID | --bind-serial SERIAL]
 * [--generation N] [--node-key RECIPIENT] FOLDER`
 */
export async function signCommand(inv: Invocation<OptionsOf<'sign'>>): Promise<CommandResult> {
  const { key, 'not-after': notAfter, 'bind-machine-id': machineId, 'bind-serial': serial, generation } = inv.flags;
  const nodeKey = nodeKeyFlag(inv.flags['node-key']);
  if (!key) throw new UsageError('sign needs --key NAME.key');
  if (inv.positionals.length !== 1) throw new UsageError('sign takes one FOLDER holding site-config.yaml');
  if (machineId && serial)
    throw new UsageError('sign binds to one node by --bind-machine-id or --bind-serial, not both');
  const expiry = expiryFlag(notAfter);
  const privateKey = await signingKeyFlag(key);
  const now = systemClock.now();
  // the same admission the node runs, off the node (no signature yet to trust): an invalid
  // site-config is refused (exit 2), and the files signed are exactly the files the node will check
  const loaded = await admitSite(inv.positionals[0]!, offNode(now));
  const { doc, files, sealed } = await sealAndSign(privateKey, loaded, {
    now,
    ...(expiry && { notAfter: expiry }),
    ...((machineId || serial) && { node: { ...(machineId && { machineId }), ...(serial && { serial }) } }),
    ...(generation !== undefined && { generation }),
    ...(nodeKey !== undefined && { nodeKey }),
  });
  await createRootFs(loaded.dir).writeAtomic(`/${SIGNATURE_FILE}`, `${JSON.stringify(doc, null, 2)}\n`, {
    mode: 0o644,
  });
  const bound = machineId ? `, for machine-id ${machineId}` : serial ? `, for serial ${serial}` : '';
  return {
    exitCode: 0,
    stdout: `${sealed.length > 0 ? `sealed ${sealed.join(', ')} for node ${doc.signed.sealedFor?.node}\n` : ''}signed ${files} file(s) of site ${loaded.site.name} into ${path.join(loaded.dir, SIGNATURE_FILE)} with key ${doc.signed.keyId}${expiry ? `, valid until ${expiry.toISOString()}` : ''}${bound}${generation !== undefined ? `, generation ${generation}` : ''}\n`,
  };
}
