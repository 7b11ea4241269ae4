/**
 * The trust check every validate, plan and run passes through once the site-config and its files
 * are loaded, before anything uses them: with a trust anchor installed under
 * /etc/sno-relocate/trust/, only a folder whose signature verifies is accepted; without one, the
 * agent goes on and says the config is unauthenticated. Then secrets in clear are held to the
 * node's rule (clear-secrets.ts).
 */
import { lstat, realpath } from 'node:fs/promises';
import path from 'node:path';
import { readBounded } from '../config/read-bounded.js';
import type { LoadedSite } from '../config/site.js';
import type { Banner } from '../engine/banner.js';
import { RefusedError } from '../base/errors.js';
import { outsideWindow } from '../base/true-time.js';
import { logEvent, type Logger } from '../log/logger.js';
import type { Clock } from '../ports/clock.js';
import type { RootFs } from '../ports/fs.js';
import {
  KeyError,
  MAX_SIGNATURE_BYTES,
  type NodeIdentity,
  readPublicKey,
  SIGNATURE_FILE,
  type Signed,
  type TrustAnchor,
  verifySiteConfig,
} from './signature.js';
import { generationProblem, readAppliedGeneration } from './generation.js';
import { revokedKeys } from './revocation.js';
import { checkClearSecrets } from './clear-secrets.js';

export const TRUST_DIR = '/etc/sno-relocate/trust';
const DEFAULT_STATE_DIR = '/var/lib/sno-relocate';
const MACHINE_ID = '/etc/machine-id';
const DMI_SERIAL = '/sys/class/dmi/id/product_serial';

export interface TrustContext {
  fs: RootFs;
  /** where the applied generation is kept (default /var/lib/sno-relocate) */
  stateDir?: string;
  clock: Clock;
  log: Logger;
  banner: Banner;
}

/** The anchor folder's entries: undefined when it is missing, a refusal when it cannot be read. */
async function listTrustDir(fs: RootFs): Promise<string[] | undefined> {
  try {
    const entries = await fs.list(TRUST_DIR);
    return entries.length > 0 || (await fs.exists(TRUST_DIR)) ? entries : undefined;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    // an unreadable folder might hold anchors: going on unauthenticated would defeat them
    throw new RefusedError(
      `site-config refused: the trust anchors under ${TRUST_DIR} cannot be read (${code ?? (err as Error).message}), and a node that has anchors must not go on unauthenticated; nothing on the host was changed`,
      { cause: err },
    );
  }
}

/**
 * The installed trust anchors; a key file that cannot be read is an error, never silently skipped,
 * and so is a trust folder that cannot be listed. Only a missing folder means "no anchors": one that
 * exists but holds no `*.pub` (empty, or a key saved under another name) refuses, naming what it
 * ignored, since someone meant this node to check signatures.
 */
export async function trustAnchors(fs: RootFs): Promise<TrustAnchor[]> {
  const entries = await listTrustDir(fs);
  if (entries === undefined) return [];
  const names = entries.filter((n) => n.endsWith('.pub')).sort();
  if (names.length === 0) {
    const ignored = entries.length > 0 ? `it holds only ${entries.sort().join(', ')}, ignored` : 'it is empty';
    throw new RefusedError(
      `site-config refused: ${TRUST_DIR} exists but holds no trust anchor (*.pub): ${ignored}; install a key or remove the folder; nothing on the host was changed`,
    );
  }
  const anchors: TrustAnchor[] = [];
  for (const name of names) {
    const where = path.posix.join(TRUST_DIR, name);
    const pem = await fs.readText(where);
    try {
      anchors.push({ name, key: readPublicKey(pem ?? '', where) });
    } catch (err) {
      throw new RefusedError(`trust anchor ${where} is unusable: ${(err as KeyError).message}; fix or remove it`);
    }
  }
  return anchors;
}

export async function nodeIdentity(fs: RootFs): Promise<NodeIdentity> {
  const machineId = (await fs.readText(MACHINE_ID))?.trim();
  const serial = (await fs.readText(DMI_SERIAL).catch(() => undefined))?.trim();
  return { ...(machineId ? { machineId } : {}), ...(serial ? { serial } : {}) };
}

/**
 * FOLDER/site-config.sig, read like every file of the folder: confined to it after resolving links,
 * a regular file, its size checked before reading. Undefined when there is none; a string is why it
 * cannot be used.
 */
async function readSignature(dir: string): Promise<Buffer | string | undefined> {
  const file = path.join(dir, SIGNATURE_FILE);
  try {
    await lstat(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    return `${SIGNATURE_FILE} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`;
  }
  try {
    return await readBounded(file, SIGNATURE_FILE, { inside: await realpath(dir), limit: MAX_SIGNATURE_BYTES });
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

const verified = new WeakMap<LoadedSite, Signed>();

/** The signed part of the signature the trust check verified for this site-config, if it verified one. */
export const verifiedSignature = (loaded: LoadedSite): Signed | undefined => verified.get(loaded);

/**
 * Who wrote it, then how it carries its secrets (src/trust/clear-secrets.ts). `deferTime`: the clock
 * is not synchronised yet, so the signature's notAfter is left to the clock step
 * (src/base/true-time.ts), which judges it again on the synchronised clock.
 */
export async function checkTrust(ctx: TrustContext, loaded: LoadedSite, deferTime = false): Promise<void> {
  await checkSignature(ctx, loaded, deferTime);
  await checkClearSecrets(ctx.fs, loaded);
}

async function checkSignature(ctx: TrustContext, loaded: LoadedSite, deferTime: boolean): Promise<void> {
  const anchors = await trustAnchors(ctx.fs);
  if (anchors.length === 0) {
    ctx.log.warn(`site-config is not authenticated: no trust anchor is installed under ${TRUST_DIR}`);
    return;
  }
  const signature = await readSignature(loaded.dir);
  const verdict =
    typeof signature === 'string'
      ? ({ trusted: false, reason: `site-config not signed by a trusted key: ${signature}` } as const)
      : verifySiteConfig({
          document: signature,
          anchors,
          revoked: await revokedKeys(ctx.fs),
          files: loaded.files,
          now: deferTime ? undefined : ctx.clock.now(),
          node: await nodeIdentity(ctx.fs),
        });
  // a genuine signature is still refused when the node has applied a newer generation
  const stale = verdict.trusted
    ? generationProblem(verdict.signed, await readAppliedGeneration(ctx.fs, ctx.stateDir ?? DEFAULT_STATE_DIR))
    : undefined;
  if (!verdict.trusted || stale !== undefined) {
    const reason = verdict.trusted ? stale : verdict.reason;
    logEvent(
      ctx.log,
      'error',
      'configUntrusted',
      { site: loaded.site.name, anchors: anchors.length },
      `site-config refused: ${reason}; nothing on the host was changed`,
    );
    await ctx.banner.show(`site-config refused: ${reason}`);
    throw new RefusedError(`site-config refused: ${reason}`);
  }
  verified.set(loaded, verdict.signed);
  ctx.log.info(
    {
      keyId: verdict.signed.keyId,
      anchor: verdict.anchor,
      notAfter: verdict.signed.notAfter,
      generation: verdict.signed.generation,
    },
    `site-config signed by trusted key ${verdict.anchor}`,
  );
  // a valid signature says the true time is no earlier than its signing
  (loaded.timeMarks ??= []).push({ what: 'site-config signature (signedAt)', at: new Date(verdict.signed.signedAt) });
  const { notAfter } = verdict.signed;
  if (deferTime && notAfter !== undefined) {
    const window = { notAfter };
    (loaded.deferred ??= []).push({ severity: 'error', path: SIGNATURE_FILE, message: 'the signature', window });
    const problem = outsideWindow(window, ctx.clock.now());
    if (problem)
      ctx.log.warn(
        { notAfter },
        `site-config signature ${problem} on the node's clock, which chronyd has not synchronised: judged again once it has`,
      );
  }
}
