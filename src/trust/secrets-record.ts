/**
 * How the applied site-config brought its secrets, for `status`: sealed to this node's key (and
 * opened in memory), or in clear on the stick, and whether this node has a node key at all (a node
 * shipped before node keys has none, and its sticks carry secrets in clear). Recorded by a run
 * before its first change, in <state folder>/secrets.json; it holds field names only.
 */
import path from 'node:path';
import * as z from 'zod';
import type { RootFs } from '../ports/fs.js';
import { readJsonFile } from '../ports/json-file.js';
import { readNodeKey } from './node-key.js';

export const SECRETS_FILE = 'secrets.json';

const recordSchema = z.strictObject({
  version: z.literal(1),
  site: z.string(),
  /** the fields that came sealed to this node's key */
  sealed: z.array(z.string()),
  /** the secret fields that came in clear (absent in records before it was kept) */
  clear: z.array(z.string()).optional(),
  /** whether the site-config said its secrets travel in clear (spec.secretsInClear) */
  inClearByChoice: z.boolean().optional(),
  at: z.iso.datetime(),
});
type SecretsRecord = z.infer<typeof recordSchema>;

const where = (stateDir: string) => path.posix.join(stateDir, SECRETS_FILE);

export async function recordSecrets(
  fs: RootFs,
  stateDir: string,
  how: Pick<SecretsRecord, 'site' | 'sealed' | 'clear' | 'inClearByChoice'>,
  now: Date,
) {
  const record: SecretsRecord = { version: 1, ...how, at: now.toISOString() };
  await fs.mkdirp(stateDir, 0o700);
  await fs.writeAtomic(where(stateDir), `${JSON.stringify(record, null, 2)}\n`, { mode: 0o644 });
}

export interface SecretsStatus {
  /** the node's recipient and sealing; null: no node key (shipped before node keys) */
  nodeKey: { recipient: string; sealing: string } | null;
  /** how the last admitted site-config brought its secrets; null before the first run */
  applied: Omit<SecretsRecord, 'version'> | null;
}

export async function secretsStatus(fs: RootFs, stateDir: string): Promise<SecretsStatus> {
  const key = await readNodeKey(fs);
  const applied = await readJsonFile(fs, where(stateDir), { what: 'secrets record', schema: recordSchema });
  return {
    nodeKey: key ? { recipient: key.recipient, sealing: key.sealing } : null,
    applied: applied ? { site: applied.site, sealed: applied.sealed, ...inClear(applied), at: applied.at } : null,
  };
}

const inClear = ({ clear, inClearByChoice }: Pick<SecretsRecord, 'clear' | 'inClearByChoice'>) => ({
  ...(clear !== undefined && { clear }),
  ...(inClearByChoice !== undefined && { inClearByChoice }),
});

/** What the applied site-config's secrets in clear were, and on whose word. */
function clearLine(site: string, applied: Pick<SecretsRecord, 'clear' | 'inClearByChoice'>, keyed: boolean): string {
  const fields = applied.clear?.length ? ` (${applied.clear.join(', ')})` : '';
  const why = applied.inClearByChoice
    ? ', as its spec.secretsInClear says'
    : keyed
      ? ", not sealed to this node's key"
      : '';
  return `Secrets:  site ${site}: in clear on the stick${why}${fields}`;
}

/** The status lines: none on a node without a key and without a run (nothing to say yet). */
export function renderSecretsStatus({ nodeKey, applied }: SecretsStatus): string {
  if (!nodeKey && !applied) return '';
  const key = nodeKey
    ? `Node key: ${nodeKey.recipient} (${nodeKey.sealing === 'tpm2' ? "sealed to the node's TPM2" : 'sealed with the host key'})`
    : 'Node key: none (shipped before node keys): its sticks carry secrets in clear';
  const how = !applied
    ? []
    : applied.sealed.length > 0
      ? [`Secrets:  site ${applied.site}: sealed for this node, opened in memory (${applied.sealed.join(', ')})`]
      : [clearLine(applied.site, applied, nodeKey !== null)];
  return `${[key, ...how].join('\n')}\n`;
}
