/**
 * The site-config file itself is confined to its folder like every file it names: a
 * site-config.yaml that is a link out of the folder is invalid (exit 2), and the error names it.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../base/errors.js';
import { loadSiteConfig } from './load.js';

const EXAMPLE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../examples/store-0042');
let work: string;
let dir: string;

beforeEach(() => {
  work = mkdtempSync(path.join(tmpdir(), 'load-'));
  dir = path.join(work, 'stick');
  cpSync(EXAMPLE, dir, { recursive: true });
});
afterEach(() => rmSync(work, { recursive: true, force: true }));

const failure = (target: string) =>
  loadSiteConfig(target, new Date()).then(
    () => undefined,
    (err: unknown) => err,
  );

describe('the site-config file', () => {
  it('loads when it is a link to a file inside its folder', async () => {
    renameSync(path.join(dir, 'site-config.yaml'), path.join(dir, 'store.yaml'));
    symlinkSync('store.yaml', path.join(dir, 'site-config.yaml'));
    await expect(loadSiteConfig(dir, new Date())).resolves.toMatchObject({ site: { name: 'store-0042' } });
  });

  it('loads from a folder reached through a link', async () => {
    symlinkSync(dir, path.join(work, 'mounted'));
    await expect(loadSiteConfig(path.join(work, 'mounted'), new Date())).resolves.toMatchObject({
      site: { name: 'store-0042' },
    });
  });

  const outside = (text: string) => {
    const elsewhere = path.join(work, 'elsewhere.yaml');
    writeFileSync(elsewhere, text);
    rmSync(path.join(dir, 'site-config.yaml'));
    symlinkSync(elsewhere, path.join(dir, 'site-config.yaml'));
  };

  it.each([
    ['the folder', () => dir],
    ['the file', () => path.join(dir, 'site-config.yaml')],
  ])('is refused with exit 2, named, when it links out of its folder (loading %s)', async (_name, target) => {
    // a valid site-config, so that only where it lives is wrong
    outside(readFileSync(path.join(EXAMPLE, 'site-config.yaml'), 'utf8'));
    const err = await failure(target());
    expect(err).toBeInstanceOf(ConfigError);
    expect(err).toMatchObject({ exitCode: 2 });
    expect((err as ConfigError).message).toBe('site-config.yaml: resolves outside the site-config folder (symlink)');
    expect((err as ConfigError).findings).toEqual([
      { severity: 'error', path: 'site-config.yaml', message: 'resolves outside the site-config folder (symlink)' },
    ]);
  });

  it('does not parse (or quote) a host file it links to', async () => {
    rmSync(path.join(dir, 'site-config.yaml'));
    symlinkSync('/etc/passwd', path.join(dir, 'site-config.yaml'));
    const err = await failure(dir);
    expect(err).toMatchObject({
      exitCode: 2,
      message: 'site-config.yaml: resolves outside the site-config folder (symlink)',
    });
  });
});

describe('the time certificates are judged at', () => {
  it('is the one passed in: a CA valid today is expired a month later', async () => {
    const key = path.join(work, 'ca.key');
    execFileSync(
      'openssl',
      ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-subj', '/CN=store-ca', '-days', '1'].concat([
        '-addext',
        'basicConstraints=critical,CA:TRUE',
        '-out',
        path.join(dir, 'ca-bundle.pem'),
      ]),
      { stdio: 'pipe' },
    );
    const config = readFileSync(path.join(dir, 'site-config.yaml'), 'utf8');
    writeFileSync(
      path.join(dir, 'site-config.yaml'),
      config.replace(/^spec:\n/m, 'spec:\n  trustBundle:\n    caBundleFile: ca-bundle.pem\n'),
    );
    const today = await loadSiteConfig(dir, new Date());
    expect(today.findings.filter((f) => f.path === '$.spec.trustBundle.caBundleFile')).toEqual([]);
    const later = await loadSiteConfig(dir, new Date(Date.now() + 30 * 86_400_000));
    expect(later.findings).toContainEqual(
      expect.objectContaining({ severity: 'warning', message: expect.stringMatching(/CN=store-ca expired on/) }),
    );
  });
});
