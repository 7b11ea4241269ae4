/**
 * The trust check against a real folder and a real root: only a missing trust folder means "no
 * anchors" (anything else unreadable refuses), and site-config.sig is read like every other file
 * of the folder, confined to it, a regular file, its size checked before a byte is read.
 */
import { cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadSiteConfig } from '../../src/config/load.js';
import type { LoadedSite } from '../../src/config/site.js';
import { RefusedError } from '../../src/base/errors.js';
import { createLogger } from '../../src/log/logger.js';
import { systemClock } from '../../src/ports/clock.js';
import { createRootFs, type RootFs } from '../../src/ports/fs.js';
import { checkTrust, TRUST_DIR, trustAnchors } from '../../src/trust/check.js';
import { generateSigningKey, readPrivateKey, signSiteConfig } from '../../src/trust/signature.js';
import { EXAMPLE } from '../helpers/cli.js';

const factory = generateSigningKey();
/** sparse: takes no room, but reading it whole would take 8 GiB */
const HUGE = 8 * 1024 * 1024 * 1024;
let work: string;
let root: string;
let lines: string[];
let banners: string[];

beforeEach(() => {
  work = mkdtempSync(path.join(tmpdir(), 'trust-check-'));
  root = path.join(work, 'root');
  mkdirSync(path.join(root, 'etc'), { recursive: true });
  writeFileSync(path.join(root, 'etc/machine-id'), '4f6b1d8c2e3a4b5c9d0e1f2a3b4c5d6e\n');
  lines = [];
  banners = [];
});
afterEach(() => rmSync(work, { recursive: true, force: true }));

const context = (fs: RootFs = createRootFs(root)) => ({
  fs,
  clock: systemClock,
  log: createLogger({ journal: false, write: (line) => void lines.push(line) }),
  banner: { show: async (line: string) => void banners.push(line) },
});

const installAnchor = () => {
  mkdirSync(path.join(root, 'etc/sno-relocate/trust'), { recursive: true });
  writeFileSync(path.join(root, 'etc/sno-relocate/trust/factory.pub'), factory.publicPem);
};

async function signedSite(): Promise<LoadedSite> {
  const dir = path.join(work, 'stick');
  cpSync(EXAMPLE, dir, { recursive: true });
  const loaded = await loadSiteConfig(dir, new Date());
  const doc = signSiteConfig(readPrivateKey(factory.privatePem, 'factory.key'), {
    site: loaded.site.name,
    files: loaded.files,
    now: new Date(),
  });
  writeFileSync(path.join(dir, 'site-config.sig'), JSON.stringify(doc));
  return loaded;
}

const refusal = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (err: unknown) => err,
  );

describe('the trust folder', () => {
  it('means no anchors only when it is missing', async () => {
    await expect(trustAnchors(createRootFs(root))).resolves.toEqual([]);
    const loaded = await signedSite();
    await checkTrust(context(), loaded);
    expect(lines.join('')).toContain(
      `site-config is not authenticated: no trust anchor is installed under ${TRUST_DIR}`,
    );
  });

  it('refuses with exit 3, naming the folder, when a file stands in its place (ENOTDIR)', async () => {
    mkdirSync(path.join(root, 'etc/sno-relocate'), { recursive: true });
    writeFileSync(path.join(root, 'etc/sno-relocate/trust'), 'not a folder\n');
    const loaded = await signedSite();
    const err = await refusal(checkTrust(context(), loaded));
    expect(err).toBeInstanceOf(RefusedError);
    expect(err).toMatchObject({ exitCode: 3 });
    expect((err as Error).message).toContain(`trust anchors under ${TRUST_DIR} cannot be read (ENOTDIR)`);
    expect(lines.join('')).not.toContain('not authenticated');
  });

  it.each([
    ['empty', [], 'it is empty'],
    ['holding a key saved as .pem and a note', ['factory.pem', 'README'], 'it holds only README, factory.pem, ignored'],
  ])('refuses with exit 3 when it exists %s, saying what it ignored', async (_what, files, said) => {
    const trust = path.join(root, 'etc/sno-relocate/trust');
    mkdirSync(trust, { recursive: true });
    for (const name of files) writeFileSync(path.join(trust, name), factory.publicPem);
    const loaded = await signedSite();
    const err = await refusal(checkTrust(context(), loaded));
    expect(err).toBeInstanceOf(RefusedError);
    expect(err).toMatchObject({ exitCode: 3 });
    expect((err as Error).message).toContain(`${TRUST_DIR} exists but holds no trust anchor (*.pub): ${said}`);
    expect(lines.join('')).not.toContain('not authenticated');
  });

  it.each(['EACCES', 'EIO', 'ELOOP'])('refuses with exit 3 when listing it fails with %s', async (code) => {
    const real = createRootFs(root);
    const failing: RootFs = {
      ...real,
      list: (p) =>
        p === TRUST_DIR ? Promise.reject(Object.assign(new Error(`${code}: listing ${p}`), { code })) : real.list(p),
    };
    const err = await refusal(trustAnchors(failing));
    expect(err).toBeInstanceOf(RefusedError);
    expect(err).toMatchObject({ exitCode: 3 });
    expect((err as Error).message).toContain(`${TRUST_DIR} cannot be read (${code})`);
  });
});

describe('site-config.sig', () => {
  it('is accepted when it is a regular file in the folder, signed by a trusted key', async () => {
    installAnchor();
    const loaded = await signedSite();
    await checkTrust(context(), loaded);
    expect(lines.join('')).toContain('site-config signed by trusted key factory.pub');
  });

  const cases: [string, (sig: string) => void, string][] = [
    [
      'a symlink to a valid signature outside the folder',
      (sig) => {
        const outside = path.join(work, 'outside.sig');
        cpSync(sig, outside);
        rmSync(sig);
        symlinkSync(outside, sig);
      },
      'site-config.sig: resolves outside the site-config folder (symlink)',
    ],
    [
      'a symlink to /dev/zero',
      (sig) => {
        rmSync(sig);
        symlinkSync('/dev/zero', sig);
      },
      'site-config.sig: resolves outside the site-config folder (symlink)',
    ],
    [
      'a folder',
      (sig) => {
        rmSync(sig);
        mkdirSync(sig);
      },
      'site-config.sig: not a regular file',
    ],
    [
      'a huge (sparse) file',
      (sig) => truncateSync(sig, HUGE),
      `site-config.sig: ${HUGE} bytes; the limit is ${64 * 1024}`,
    ],
    [
      'a dangling symlink',
      (sig) => {
        rmSync(sig);
        symlinkSync(path.join(work, 'gone.sig'), sig);
      },
      'site-config.sig: no such file',
    ],
  ];

  it.each(cases)('is refused with exit 3, without being read, when it is %s', async (_name, prepare, reason) => {
    installAnchor();
    const loaded = await signedSite();
    prepare(path.join(loaded.dir, 'site-config.sig'));
    const err = await refusal(checkTrust(context(), loaded));
    expect(err).toBeInstanceOf(RefusedError);
    expect(err).toMatchObject({ exitCode: 3 });
    expect((err as Error).message).toContain(`site-config refused: site-config not signed by a trusted key: ${reason}`);
    expect(banners).toEqual([expect.stringContaining(reason)]);
    expect(lines.join('')).toContain('nothing on the host was changed');
  });
});
