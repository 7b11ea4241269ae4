/**
 * The binary installer (systemd/sno-relocate-install) run for real, as root in a mount namespace of
 * its own whose /usr/local is a temporary folder: a first install, the same image again, an
 * upgrade to another digest keeping the previous binary, a rollback to it with no registry in
 * reach, and a kept binary that no longer matches its digest; and the first upgrade of a node whose
 * binary the installer shipped before upgrades put there (commit 54ff95c, kept verbatim in
 * fixtures/), which kept no records. podman and systemctl are the boundaries that cannot run here:
 * stand-ins on PATH that serve images from a folder named by digest (refusing any other), keep
 * what was pulled in a storage folder as podman does, and record what they were asked.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO } from '../helpers/cli.js';

const SCRIPT = path.join(REPO, 'systemd/sno-relocate-install');
/** the installer as shipped before upgrades, from the project's history */
const SCRIPT_54FF95C = path.join(REPO, 'test/install/fixtures/sno-relocate-install.54ff95c');
const digest = (c: string) => c.repeat(64);
const image = (c: string) => `registry.factory.example.com:5000/sno-relocate/agent@sha256:${digest(c)}`;

let work: string;
let usrLocal: string;
let registry: string;
let storage: string;
let calls: string;

function exe(file: string, body: string): void {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, `#!/bin/sh\n${body}\n`);
  chmodSync(file, 0o755);
}

/** an image in the stand-in registry, whose binary says `version` */
function publish(c: string, version: string): void {
  exe(path.join(registry, digest(c), 'sno-relocate'), `echo "sno-relocate ${version}"`);
}

function install(img: string, script = SCRIPT): { code: number | null; out: string } {
  const r = spawnSync(
    'unshare',
    ['--mount', '--propagation', 'private', 'sh', '-c', `mount --bind "$USR_LOCAL" /usr/local && exec bash ${script}`],
    {
      encoding: 'utf8',
      env: {
        PATH: `${path.join(work, 'bin')}:/usr/sbin:/usr/bin:/sbin:/bin`,
        USR_LOCAL: usrLocal,
        REGISTRY: registry,
        STORAGE: storage,
        CALLS: calls,
        SNO_RELOCATE_IMAGE: img,
      },
    },
  );
  return { code: r.status, out: r.stdout + r.stderr };
}

const installed = () =>
  spawnSync(path.join(usrLocal, 'bin/sno-relocate'), ['--version'], { encoding: 'utf8' }).stdout.trim();
const lib = (name: string) => readFileSync(path.join(usrLocal, 'lib/sno-relocate', name), 'utf8').trim();
const asked = () => (existsSync(calls) ? readFileSync(calls, 'utf8') : '');

beforeAll(() => {
  work = mkdtempSync(path.join(tmpdir(), 'installer-'));
  usrLocal = path.join(work, 'usr-local');
  registry = path.join(work, 'registry');
  storage = path.join(work, 'storage');
  calls = path.join(work, 'calls');
  mkdirSync(usrLocal);
  mkdirSync(registry);
  mkdirSync(storage);
  exe(
    path.join(work, 'bin/podman'),
    `echo "podman $*" >> "$CALLS"
case "$1" in
  pull) shift; policy=always
        while [ $# -gt 1 ]; do case "$1" in --authfile|--policy) [ "$1" = --policy ] && policy=$2; shift 2 ;; *) exit 125 ;; esac; done
        d=\${1##*@sha256:}
        [ "$policy" = missing ] && [ -x "$STORAGE/$d/sno-relocate" ] && exit 0
        [ -x "$REGISTRY/$d/sno-relocate" ] || { echo "Error: $1: manifest unknown" >&2; exit 125; }
        mkdir -p "$STORAGE/$d" && cp "$REGISTRY/$d/sno-relocate" "$STORAGE/$d/" ;;
  create) d=\${2##*@sha256:}; [ -d "$STORAGE/$d" ] || exit 125; echo "ctr-$d" ;;
  cp) id=\${2%%:*}; [ "\${2#*:}" = /usr/local/bin/sno-relocate ] || exit 125; cp "$STORAGE/\${id#ctr-}/sno-relocate" "$3" ;;
  rm) ;;
  *) exit 125 ;;
esac`,
  );
  exe(path.join(work, 'bin/systemctl'), 'echo "systemctl $*" >> "$CALLS"');
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('sno-relocate-install', () => {
  it('installs the first binary and starts the agent, which had no binary to run', () => {
    publish('a', '1.0.0');
    const r = install(image('a'));
    expect(r.code, r.out).toBe(0);
    expect(r.out).toContain(`installed sno-relocate 1.0.0 from ${image('a')}`);
    expect(installed()).toBe('sno-relocate 1.0.0');
    expect(lib('installed-image')).toBe(image('a'));
    expect(asked()).toContain('systemctl --no-block start sno-relocate.service');
    expect(existsSync(path.join(usrLocal, 'lib/sno-relocate/sno-relocate.previous'))).toBe(false);
  });

  it('does nothing, and pulls nothing, when the image named is the one installed', () => {
    rmSync(calls, { force: true });
    const r = install(image('a'));
    expect(r.code, r.out).toBe(0);
    expect(r.out).toContain(`the agent of ${image('a')} is installed`);
    expect(asked()).toBe('');
  });

  it('upgrades to a new digest, keeps the binary it replaces, and restarts the watcher only', () => {
    publish('b', '1.1.0');
    rmSync(calls, { force: true });
    const r = install(image('b'));
    expect(r.code, r.out).toBe(0);
    expect(r.out).toContain(`installed sno-relocate 1.1.0 from ${image('b')} (was ${image('a')})`);
    expect(installed()).toBe('sno-relocate 1.1.0');
    expect(lib('installed-image')).toBe(image('b'));
    expect(lib('previous-image')).toBe(image('a'));
    expect(asked()).toContain(`podman pull --policy missing ${image('b')}`);
    expect(asked()).toContain('systemctl try-restart sno-relocate-watch.service');
    expect(asked()).not.toContain('start sno-relocate.service');
  });

  it('a pull that fails leaves the installed binary and its record as they were', () => {
    const r = install(image('c'));
    expect(r.code).not.toBe(0);
    expect(r.out).toContain('manifest unknown');
    expect(installed()).toBe('sno-relocate 1.1.0');
    expect(lib('installed-image')).toBe(image('b'));
  });

  it('rolls back to the previous image from the kept binary, with no registry in reach', () => {
    rmSync(path.join(registry, digest('a')), { recursive: true });
    rmSync(calls, { force: true });
    const r = install(image('a'));
    expect(r.code, r.out).toBe(0);
    expect(r.out).toContain('installed sno-relocate 1.0.0 from the kept previous binary');
    expect(asked()).not.toContain('podman');
    expect(installed()).toBe('sno-relocate 1.0.0');
    // and the one rolled back from is now the one kept
    expect(lib('previous-image')).toBe(image('b'));
  });

  it('pulls rather than trust a kept binary that no longer matches its digest', () => {
    exe(path.join(usrLocal, 'lib/sno-relocate/sno-relocate.previous'), 'echo "sno-relocate 6.6.6"');
    rmSync(calls, { force: true });
    const r = install(image('b'));
    expect(r.code, r.out).toBe(0);
    expect(asked()).toContain(`podman pull --policy missing ${image('b')}`);
    expect(installed()).toBe('sno-relocate 1.1.0');
  });

  it('a first upgrade from the installer shipped before upgrades keeps the binary it replaces', () => {
    // the node as the old unit left it: a binary, no records
    usrLocal = mkdtempSync(path.join(work, 'usr-local-54ff95c-'));
    publish('d', '0.9.0');
    const old = install(image('d'), SCRIPT_54FF95C);
    expect(old.code, old.out).toBe(0);
    expect(existsSync(path.join(usrLocal, 'lib/sno-relocate'))).toBe(false);

    publish('e', '1.2.0');
    const r = install(image('e'));
    expect(r.code, r.out).toBe(0);
    expect(installed()).toBe('sno-relocate 1.2.0');
    expect(
      spawnSync(path.join(usrLocal, 'lib/sno-relocate/sno-relocate.previous'), ['--version'], { encoding: 'utf8' })
        .stdout,
    ).toBe('sno-relocate 0.9.0\n');
    expect(lib('previous-image')).toBe('unknown (installed before image records were kept)');
    // a cut install run again keeps that binary, not the new one
    const again = install(image('e'));
    expect(again.code, again.out).toBe(0);
    expect(lib('previous-image')).toBe('unknown (installed before image records were kept)');
  });

  it('rolls back to the image the old installer put in place with no registry in reach', () => {
    rmSync(path.join(registry, digest('d')), { recursive: true });
    rmSync(calls, { force: true });
    const r = install(image('d'));
    expect(r.code, r.out).toBe(0);
    expect(r.out).toContain(`installed sno-relocate 0.9.0 from ${image('d')} (was ${image('e')})`);
    expect(installed()).toBe('sno-relocate 0.9.0');
    expect(asked()).toContain(`podman pull --policy missing ${image('d')}`);
    expect(lib('previous-image')).toBe(image('e'));
  });
});
