/**
 * Secrets in clear on a stick, and the nodes that take them. A node with a key (factory prepare
 * made one) refuses every secret that is not sealed to it: a stick it accepts leaks nothing when
 * lost. A node shipped before node keys cannot open sealed secrets, so its sticks carry them in
 * clear, but only when the site-config says so in `spec.secretsInClear: true` (default false): the
 * author chooses it for that node, it is never what a forgotten `--node-key` gives. A machine that
 * factory prepare never made a node of (a workstation, a lab root) has neither rule to keep.
 *
 * An image-based install's config media (manifest.json) has no field to say so: the upstream format
 * carries its secrets in clear by design, so a node without a key takes it as it is.
 */
import { RefusedError } from '../base/errors.js';
import type { LoadedSite } from '../config/site.js';
import { FACTORY_RECORD } from '../base/node-files.js';
import type { RootFs } from '../ports/fs.js';
import { NODE_KEY_CREDENTIAL } from './node-key.js';
import { secretFields } from './seal-folder.js';

export const SECRETS_IN_CLEAR = '$.spec.secretsInClear';

/** The secret fields the site-config carries in clear: neither opened with the node's key nor left sealed. */
export function clearSecretFields(loaded: LoadedSite): string[] {
  if (loaded.media !== 'native') return [];
  const notClear = new Set([...(loaded.opened ?? []), ...(loaded.sealed?.fields ?? [])]);
  return secretFields(loaded.document).filter((field) => !notClear.has(field));
}

/** Refuses (exit 3) secrets in clear this node must not take; nothing on the host has changed yet. */
export async function checkClearSecrets(fs: RootFs, loaded: LoadedSite): Promise<void> {
  const clear = clearSecretFields(loaded);
  if (clear.length === 0) return;
  const fields = clear.join(', ');
  if (await fs.exists(NODE_KEY_CREDENTIAL))
    throw new RefusedError(
      `site-config refused: ${fields} in clear on the stick, and this node has a node key (${NODE_KEY_CREDENTIAL}): it takes secrets sealed to it only (sign --node-key, or render's node-key column), whatever ${SECRETS_IN_CLEAR} says; nothing on the host was changed`,
    );
  if (loaded.document.spec.secretsInClear !== true && (await fs.exists(FACTORY_RECORD)))
    throw new RefusedError(
      `site-config refused: ${SECRETS_IN_CLEAR}: ${fields} in clear on the stick, and this node, shipped without a node key, takes secrets in clear only when the site-config says so: set spec.secretsInClear: true for this node, or give it a key (factory prepare) and seal the folder to it; nothing on the host was changed`,
    );
}
