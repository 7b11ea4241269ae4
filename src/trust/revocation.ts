/**
 * The revocation list of signing keys: /etc/sno-relocate/trust/revoked-keys, delivered with the
 * trust anchors through the MachineConfig. One key id (`sha256:<64 hex digits>`, as `keygen` and
 * `sign` print it) per line; `#` starts a comment. A signature by a revoked key is refused even
 * while its public key is still installed, so a lost signing key is shut out by one file without
 * waiting for every node's anchors to change. A line that is not a key id refuses every stick: a
 * damaged list must not silently readmit the keys it named.
 */
import { RefusedError } from '../base/errors.js';
import type { RootFs } from '../ports/fs.js';

/** beside the anchors in the trust folder (TRUST_DIR) */
export const REVOKED_KEYS_NAME = 'revoked-keys';
export const REVOKED_KEYS = `/etc/sno-relocate/trust/${REVOKED_KEYS_NAME}`;
const KEY_ID = /^sha256:[0-9a-f]{64}$/;

/** The key ids a revocation list's text names; throws naming the first line that is not one. */
export function parseRevokedKeys(text: string, where: string): Set<string> {
  const revoked = new Set<string>();
  text.split('\n').forEach((raw, index) => {
    const line = raw.replace(/#.*/, '').trim();
    if (line === '') return;
    if (!KEY_ID.test(line))
      throw new RefusedError(
        `site-config refused: ${where} line ${index + 1} is not a key id (sha256:<64 hex digits>); fix the revocation list; nothing on the host was changed`,
      );
    revoked.add(line);
  });
  return revoked;
}

/** The node's revoked signing keys: empty without a list. */
export async function revokedKeys(fs: RootFs): Promise<Set<string>> {
  const text = await fs.readText(REVOKED_KEYS);
  return text === undefined ? new Set() : parseRevokedKeys(text, REVOKED_KEYS);
}
