/**
 * The support bundle reads a real journal: journal files written by systemd's own
 * systemd-journal-remote, read by the real journalctl through `support-bundle --root`. Each program
 * writes under the unit or identifier it really uses on a node (the sources are cited in
 * src/support/bundle.ts): kubelet under kubelet.service (as kubenswrapper), CRI-O under crio.service,
 * NetworkManager under NetworkManager.service, and the machine-config daemon from its pod through
 * `logger` (identifier root, "machine-config-daemon[PID]: ...") and from its first-boot unit. Each
 * part holds its own lines, none of another program's, and none of the corpus's secrets planted
 * in them.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { leaks, makePrivateKeys, secretCorpus, secretValues, type CorpusEntry } from '../fixtures/secret-corpus.js';
import { unpackBundle } from '../helpers/bundle.js';
import { runCli } from '../helpers/cli.js';

const JOURNAL_REMOTE = '/usr/lib/systemd/systemd-journal-remote';
const MACHINE_ID = 'fedcba9876543210fedcba9876543210';
const BOOT_ID = '0123456789abcdef0123456789abcdef';

/** the journal fields of one program, as journald records them on a node */
interface Writer {
  part: string;
  fields: Record<string, string>;
  /** a line support needs from it */
  line: string;
}

const WRITERS: Writer[] = [
  {
    part: 'kubelet',
    fields: { _SYSTEMD_UNIT: 'kubelet.service', SYSLOG_IDENTIFIER: 'kubenswrapper', _COMM: 'kubelet', _PID: '2345' },
    line: 'E1128 03:20:00.000000    2345 kubelet.go:2412] "Error syncing pod, skipping" pod="openshift-ingress/router-default-5d"',
  },
  {
    part: 'crio',
    fields: { _SYSTEMD_UNIT: 'crio.service', SYSLOG_IDENTIFIER: 'crio', _COMM: 'crio', _PID: '1789' },
    line: 'time="2026-11-28T03:20:00Z" level=info msg="Pulling image: quay.io/openshift-release-dev/ocp-release:4.18.3" id=7f3a',
  },
  {
    part: 'NetworkManager',
    fields: {
      _SYSTEMD_UNIT: 'NetworkManager.service',
      SYSLOG_IDENTIFIER: 'NetworkManager',
      _COMM: 'NetworkManager',
      _PID: '1123',
    },
    line: "<info>  [1764300000.1234] device (br-ex): state change: activated -> deactivating (reason 'connection-removed')",
  },
  {
    part: 'machine-config-daemon',
    // the daemon's logger(1) runs in the pod's CRI-O scope, untagged: the identifier is the user's name
    fields: { _SYSTEMD_UNIT: 'crio-9c1d.scope', SYSLOG_IDENTIFIER: 'root', _COMM: 'logger', _PID: '40412' },
    line: 'machine-config-daemon[4567]: Starting update from rendered-master-1a2b to rendered-master-3c4d',
  },
  {
    part: 'machine-config-daemon',
    fields: {
      _SYSTEMD_UNIT: 'machine-config-daemon-firstboot.service',
      SYSLOG_IDENTIFIER: 'machine-config-daemon',
      _COMM: 'machine-config-',
      _PID: '1501',
    },
    line: 'I1128 03:20:00.000000    1501 update.go:2631] Completing firstboot: applying rendered-master-3c4d',
  },
];
/** a program whose lines belong in no part */
const SSHD: Writer = {
  part: 'none',
  fields: { _SYSTEMD_UNIT: 'sshd.service', SYSLOG_IDENTIFIER: 'sshd', _COMM: 'sshd', _PID: '999' },
  line: 'Accepted publickey for core from 192.0.2.7 port 50022 ssh2',
};

let work: string;
let keys: Record<string, string>;
beforeAll(() => {
  work = mkdtempSync(path.join(tmpdir(), 'bundle-journal-'));
  keys = makePrivateKeys();
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

/**
 * One entry in the journal export format (systemd's journal-export-formats): a field with a newline
 * in it is written as its name, a newline, its length as 64-bit little-endian, and its bytes.
 */
function exportEntry(fields: Record<string, string>): Buffer {
  const parts = Object.entries(fields).map(([name, value]) => {
    if (!value.includes('\n')) return Buffer.from(`${name}=${value}\n`);
    const data = Buffer.from(value);
    const size = Buffer.alloc(8);
    size.writeBigUInt64LE(BigInt(data.length));
    return Buffer.concat([Buffer.from(`${name}\n`), size, data, Buffer.from('\n')]);
  });
  return Buffer.concat([...parts, Buffer.from('\n')]);
}

/** a node root whose journal holds each writer's line and the corpus under each writer */
function nodeWithJournal(corpus: readonly CorpusEntry[]): string {
  const root = path.join(work, 'node');
  const dir = path.join(root, 'var/log/journal', MACHINE_ID);
  mkdirSync(dir, { recursive: true });
  let usec = 1_764_300_000_000_000;
  const entry = (w: Writer, message: string) => {
    usec += 1000;
    return exportEntry({
      __REALTIME_TIMESTAMP: String(usec),
      __MONOTONIC_TIMESTAMP: String(usec - 1_764_299_000_000_000),
      _BOOT_ID: BOOT_ID,
      _MACHINE_ID: MACHINE_ID,
      _HOSTNAME: 'sno-store42',
      PRIORITY: '6',
      ...w.fields,
      MESSAGE: message,
    });
  };
  const entries = [...WRITERS, SSHD].flatMap((w) => [
    entry(w, w.line),
    ...corpus.map((c, i) => entry(w, `${w.part} corpus-${i}: ${c.text}`)),
  ]);
  const input = path.join(work, 'journal.export');
  writeFileSync(input, Buffer.concat(entries));
  execFileSync(JOURNAL_REMOTE, ['-o', path.join(dir, 'system.journal'), input], { stdio: 'pipe' });
  return root;
}

describe('support-bundle on a real journal', () => {
  it("holds each program's lines in its part, by the identifiers it really writes under, and no secret", () => {
    const [values] = fc.sample(secretValues, 1);
    const corpus = secretCorpus(values!, keys);
    const root = nodeWithJournal(corpus);
    const out = path.join(work, 'bundle.tar.gz');
    const r = runCli(['support-bundle', '--root', root, '--out', out]);
    expect(r.code, r.stderr).toBe(0);
    const files = unpackBundle(out, path.join(work, 'unpacked'));

    for (const w of WRITERS) {
      const text = files.get(`journal/${w.part}.txt`)!;
      expect(text, `${w.part}: ${w.line}`).toContain(w.line);
      // every planted line is there, its secret cut out
      for (const i of corpus.keys()) expect(text).toContain(`${w.part} corpus-${i}:`);
    }
    for (const part of ['kubelet', 'crio', 'NetworkManager', 'machine-config-daemon']) {
      const text = files.get(`journal/${part}.txt`)!;
      for (const other of [...WRITERS, SSHD].filter((w) => w.part !== part))
        expect(text, `${other.part}'s line in ${part}`).not.toContain(other.line);
    }
    for (const [name, text] of files) expect(leaks(text, corpus), name).toEqual([]);
  });
});
