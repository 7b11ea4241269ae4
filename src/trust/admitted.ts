/**
 * What a run settles once its site-config is admitted and before its first change on the host:
 * sealed fields this node could not open refuse the run, and the generation it applies is
 * recorded, so that from now on an older stick is refused (src/trust/generation.ts), and so is how
 * the site-config brought its secrets, for `status`.
 */
import { RefusedError } from '../base/errors.js';
import type { LoadedSite } from '../config/site.js';
import type { RootFs } from '../ports/fs.js';
import type { Clock } from '../ports/clock.js';
import { verifiedSignature } from './check.js';
import { recordGeneration } from './generation.js';
import { NODE_KEY_CREDENTIAL } from './node-key.js';
import { recordSecrets } from './secrets-record.js';
import { clearSecretFields } from './clear-secrets.js';

/** Refuses (exit 3) a site-config whose sealed fields this node could not open: `plan` and `run` need them. */
export function refuseUnopened(loaded: LoadedSite): void {
  if (loaded.sealed)
    throw new RefusedError(
      `site-config refused: ${loaded.sealed.fields.join(', ')} sealed for node ${loaded.sealed.node}, and this node has no node key (${NODE_KEY_CREDENTIAL}) to open them; nothing on the host was changed`,
    );
}

export async function beforeFirstChange(
  rt: { fs: RootFs; clock: Clock; stateDir: string },
  loaded: LoadedSite,
): Promise<void> {
  refuseUnopened(loaded);
  await recordGeneration(rt.fs, rt.stateDir, verifiedSignature(loaded), rt.clock.now());
  await recordSecrets(
    rt.fs,
    rt.stateDir,
    {
      site: loaded.site.name,
      sealed: loaded.opened ?? [],
      clear: clearSecretFields(loaded),
      inClearByChoice: loaded.document.spec.secretsInClear === true,
    },
    rt.clock.now(),
  );
}
