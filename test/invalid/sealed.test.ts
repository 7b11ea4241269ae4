/**
 * Hostile sealed values on a node that has a node key (made and sealed by the real systemd-creds):
 * malformed armor, truncated headers, a tampered payload, another node's recipient, a sealed
 * inline value that holds no JSON, and age's binary format where armor is expected. Each is
 * refused by `validate` with a plain reason naming the field, and nothing under the node's root
 * changes.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { armor, Encrypter, generateX25519Identity, identityToRecipient } from 'age-encryption';
import yaml from 'js-yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log/logger.js';
import { createExec } from '../../src/ports/exec.js';
import { createRootFs } from '../../src/ports/fs.js';
import { ensureNodeKey } from '../../src/trust/node-key.js';
import { sealTo } from '../../src/trust/sealed-format.js';
import { layFactoryNode } from '../fixtures/factory-node.js';
import { EXAMPLE, runCli } from '../helpers/cli.js';
import { snapshotTree } from '../helpers/tree.js';

let work: string;
let root: string;
let recipient: string;
let pullSecret: string;

interface SealedCase {
  name: string;
  /** what the pull secret file (or, with `inline`, the pullSecret field) holds instead */
  sealed: () => Promise<string | Buffer>;
  inline?: boolean;
  exitCode: 2 | 3;
  /** what the refusal says */
  says: string;
}

/** the binary age file of the pull secret, for the node */
async function binary(): Promise<Uint8Array> {
  const encrypter = new Encrypter();
  encrypter.addRecipient(recipient);
  return encrypter.encrypt(pullSecret);
}

const CASES: SealedCase[] = [
  {
    name: 'armor with a line of the wrong length',
    sealed: async () => (await sealTo(recipient, pullSecret)).replace(/\n([A-Za-z0-9+/=]{64})\n/, '\n$1AAAA\n'),
    exitCode: 3,
    says: '$.spec.pullSecretFile: the sealed value is not armored age (invalid line length)',
  },
  {
    name: 'armor without its footer',
    sealed: async () => (await sealTo(recipient, pullSecret)).replace('-----END AGE ENCRYPTED FILE-----', ''),
    exitCode: 3,
    says: '$.spec.pullSecretFile: the sealed value is not armored age',
  },
  {
    name: 'a header truncated inside its recipient stanza',
    sealed: async () => armor.encode((await binary()).subarray(0, 40)),
    exitCode: 3,
    says: '$.spec.pullSecretFile: the sealed value is damaged (invalid stanza)',
  },
  {
    name: 'a header cut before its MAC line',
    sealed: async () => {
      const file = await binary();
      const mac = Buffer.from(file).indexOf('\n---');
      return armor.encode(file.subarray(0, mac + 1));
    },
    exitCode: 3,
    says: '$.spec.pullSecretFile: the sealed value is damaged',
  },
  {
    name: 'a payload altered after sealing',
    sealed: async () => {
      const file = Uint8Array.from(await binary());
      file[file.length - 5]! ^= 1;
      return armor.encode(file);
    },
    exitCode: 3,
    says: '$.spec.pullSecretFile: the sealed value is damaged (invalid tag)',
  },
  {
    name: "another node's recipient",
    sealed: async () => sealTo(await identityToRecipient(await generateX25519Identity()), pullSecret),
    exitCode: 3,
    says: "$.spec.pullSecretFile: sealed for another node's key (the stick does not say which), not for this node (4f6b1d8c2e3a4b5c9d0e1f2a3b4c5d6e)",
  },
  {
    name: "age's binary format where armor is expected",
    sealed: async () => Buffer.from(await binary()),
    exitCode: 2,
    says: '$.spec.pullSecretFile: pull-secret.json is not valid JSON',
  },
  {
    name: 'a sealed inline value that holds no JSON',
    sealed: async () => sealTo(recipient, 'auths: {}'),
    inline: true,
    exitCode: 2,
    says: '$.spec.pullSecret: the sealed value does not hold JSON',
  },
];

beforeAll(async () => {
  work = mkdtempSync(path.join(tmpdir(), 'sealed-hostile-'));
  root = path.join(work, 'root');
  layFactoryNode(root);
  const log = createLogger({ journal: false, write: () => undefined });
  recipient = (await ensureNodeKey({ fs: createRootFs(root), exec: createExec(log) }, new Date())).recipient;
  pullSecret = readFileSync(path.join(EXAMPLE, 'pull-secret.json'), 'utf8');
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('hostile sealed values', () => {
  it.each(CASES)('$name: refused, naming the field, with nothing changed', async (c) => {
    const dir = path.join(work, c.name.replace(/\W+/g, '-'));
    cpSync(EXAMPLE, dir, { recursive: true });
    const sealed = await c.sealed();
    if (c.inline) {
      const file = path.join(dir, 'site-config.yaml');
      const doc = yaml.load(readFileSync(file, 'utf8')) as { spec: Record<string, unknown> };
      delete doc.spec.pullSecretFile;
      doc.spec.pullSecret = sealed.toString();
      writeFileSync(file, yaml.dump(doc));
    } else writeFileSync(path.join(dir, 'pull-secret.json'), sealed);
    const before = snapshotTree(root);
    const result = runCli(['validate', dir, '--root', root]);
    expect(result.code, result.stderr).toBe(c.exitCode);
    expect(result.stderr).toContain(c.says);
    expect(result.stderr).not.toContain(JSON.parse(pullSecret).auths['registry.store42.example.com:5000'].auth);
    expect(snapshotTree(root)).toEqual(before);
  });

  it('still admits the honest sealed value, so each case fails for its own reason', async () => {
    const dir = path.join(work, 'honest');
    cpSync(EXAMPLE, dir, { recursive: true });
    writeFileSync(path.join(dir, 'pull-secret.json'), await sealTo(recipient, pullSecret));
    const result = runCli(['validate', dir, '--root', root]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).not.toContain('sealed for');
  });
});
