/**
 * Site secrets sealed to the node's key, with the real tools: the node key made and sealed by the
 * real systemd-creds (the host key of each test root: this machine has no TPM2, the VM suite has
 * one), sites sealed and signed by the built executable, Debian's age CLI opening what the agent
 * sealed and sealing what the agent opens, and the node admitting, listing or refusing a sealed
 * stick with nothing changed under its root.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import yaml from 'js-yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admitSite, offNode } from '../../src/config/admit.js';
import { createLogger } from '../../src/log/logger.js';
import { systemClock } from '../../src/ports/clock.js';
import { createExec } from '../../src/ports/exec.js';
import { createRootFs } from '../../src/ports/fs.js';
import { makeRecord, recordText } from '../../src/node/factory-record.js';
import { FACTORY_RECORD } from '../../src/base/node-files.js';
import { beforeFirstChange } from '../../src/trust/admitted.js';
import { ensureNodeKey, NODE_KEY_CREDENTIAL, type NodeKey, nodeUnsealer } from '../../src/trust/node-key.js';
import { layFactoryNode } from '../fixtures/factory-node.js';
import { EXAMPLE, runCli } from '../helpers/cli.js';
import { opensslCa, opensslServing } from '../helpers/openssl.js';
import { hostTree, snapshotTree } from '../helpers/tree.js';

const PROXY_PASSWORD = 'Pr0xy-Passw0rd-Of-Store-42';
const PROXY = `http://store42:${PROXY_PASSWORD}@proxy.store42.example.com:3128`;

let work: string;
let factoryKey: string;
/** the node the sites are sealed for (serial SN1234), another node (SN9999), and one without a node key */
const nodes: Record<'mine' | 'other' | 'keyless', { root: string; key?: NodeKey }> = {
  mine: { root: '' },
  other: { root: '' },
  keyless: { root: '' },
};
/** the plaintext site folder every case starts from, and its secrets */
let plain: string;
let secrets: { name: string; text: string; material: string; public?: string }[];

const quiet = createLogger({ journal: false, write: () => undefined });
const nodeCtx = (root: string) => ({ fs: createRootFs(root), exec: createExec(quiet) });
const hostKey = (root: string) => path.join(root, 'var/lib/systemd/credential.secret');

function layNode(name: string, serial: string): string {
  const root = path.join(work, name);
  layFactoryNode(root);
  mkdirSync(path.join(root, 'sys/class/dmi/id'), { recursive: true });
  writeFileSync(path.join(root, 'sys/class/dmi/id/product_serial'), `${serial}\n`);
  mkdirSync(path.join(root, 'etc/sno-relocate/trust'), { recursive: true });
  cpSync(`${factoryKey}.pub`, path.join(root, 'etc/sno-relocate/trust/factory.pub'));
  return root;
}

/** a copy of the plaintext site, sealed and signed by `sign` for the node given */
function sealedSite(name: string, flags: string[] = ['--bind-serial', 'SN1234']): string {
  const dir = path.join(work, name);
  cpSync(plain, dir, { recursive: true });
  const signed = runCli(['sign', '--key', `${factoryKey}.key`, ...flags, '--node-key', nodes.mine.key!.recipient, dir]);
  expect(signed.code, signed.stderr).toBe(0);
  return dir;
}

/** the node's identity, out of its credential with the real systemd-creds: what only that node can do */
function identityFile(root: string): string {
  const identity = execFileSync(
    'systemd-creds',
    ['decrypt', '--name=sno-relocate-node-key', path.join(root, NODE_KEY_CREDENTIAL), '-'],
    { env: { ...process.env, SYSTEMD_CREDENTIAL_SECRET: hostKey(root) }, encoding: 'utf8' },
  );
  const file = path.join(work, `identity-${path.basename(root)}`);
  writeFileSync(file, identity, { mode: 0o600 });
  return file;
}

const onNode = (root: string, ...args: string[]) => runCli([...args, '--root', root]);

beforeAll(async () => {
  work = mkdtempSync(path.join(tmpdir(), 'sealed-'));
  factoryKey = path.join(work, 'factory');
  expect(runCli(['keygen', '--out', factoryKey]).code).toBe(0);
  nodes.mine.root = layNode('mine', 'SN1234');
  nodes.other.root = layNode('other', 'SN9999');
  nodes.keyless.root = layNode('keyless', 'SN5555');
  nodes.mine.key = await ensureNodeKey(nodeCtx(nodes.mine.root), new Date());
  nodes.other.key = await ensureNodeKey(nodeCtx(nodes.other.root), new Date());

  plain = path.join(work, 'plain');
  cpSync(EXAMPLE, plain, { recursive: true });
  const ca = opensslCa(plain, 'site-ca');
  opensslServing(plain, 'ingress', ca, 'DNS:*.apps.sno.store42.example.com');
  for (const f of ['ingress.csr', 'ingress.ext', 'site-ca.srl']) rmSync(path.join(plain, f), { force: true });
  const doc = yaml.load(readFileSync(path.join(plain, 'site-config.yaml'), 'utf8')) as {
    spec: Record<string, unknown>;
  };
  doc.spec.certificates = { ingress: { certFile: 'ingress.crt', keyFile: 'ingress.key' } };
  doc.spec.access = { siteCA: { certFile: path.basename(ca.crt), keyFile: path.basename(ca.key) } };
  doc.spec.proxy = { httpsProxy: PROXY, noProxy: '.store42.example.com' };
  writeFileSync(path.join(plain, 'site-config.yaml'), yaml.dump(doc));
  const pem = (file: string) => readFileSync(path.join(plain, file), 'utf8');
  const pullSecret = pem('pull-secret.json');
  const auths = Object.values((JSON.parse(pullSecret) as { auths: Record<string, { auth: string }> }).auths);
  const body = (file: string) => pem(file).replace(/-----(BEGIN|END) [A-Z ]+-----|\n/g, '');
  const certificates = readdirSync(plain)
    .filter((f) => f.endsWith('.crt'))
    .map(body)
    .join('\n');
  secrets = [
    { name: 'pull secret', text: pullSecret, material: auths.map((a) => a.auth).join(' ') },
    // a private key file holds its public half and its algorithm's identifier too: those parts are
    // on the certificates beside it
    { name: 'ingress key', text: pem('ingress.key'), material: body('ingress.key'), public: certificates },
    { name: 'site CA key', text: pem('site-ca.key'), material: body('site-ca.key'), public: certificates },
    { name: 'proxy password', text: PROXY_PASSWORD, material: PROXY_PASSWORD },
  ];
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** the first 16-byte window of each secret's private material that shows anywhere in the folder's bytes */
function plaintextOn(dir: string): string[] {
  const bytes = readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => readFileSync(path.join(e.parentPath, e.name)));
  const found: string[] = [];
  for (const { name, material, public: publicPart } of secrets)
    for (let i = 0; i + 16 <= material.length; i += 1) {
      const window = material.slice(i, i + 16);
      if (window.includes(' ') || publicPart?.includes(window)) continue;
      if (bytes.some((b) => b.includes(window))) {
        found.push(`${name}: ${JSON.stringify(window)}`);
        break;
      }
    }
  return found;
}

describe('the node key', () => {
  it('is an age identity in a systemd credential: 0600, no identity in clear, the same on a second prepare', async () => {
    const { root, key } = nodes.mine;
    const tpm = /^\+driver$/m.test(spawnSync('systemd-creds', ['has-tpm2'], { encoding: 'utf8' }).stdout);
    expect(key!.sealing).toBe(tpm ? 'tpm2' : 'host');
    expect(key!.recipient).toMatch(/^age1[02-9ac-hj-np-z]{58}$/);
    const credential = path.join(root, NODE_KEY_CREDENTIAL);
    expect(statSync(credential).mode & 0o777).toBe(0o600);
    expect(readFileSync(credential, 'utf8')).not.toContain('AGE-SECRET-KEY-');
    expect(readFileSync(identityFile(root), 'utf8')).toMatch(/^AGE-SECRET-KEY-1[0-9A-Z]+\s*$/);
    expect(await ensureNodeKey(nodeCtx(root), new Date())).toEqual(key);
  });

  it('does not open when its credential file is moved to another machine', async () => {
    const dir = sealedSite('moved');
    const thief = path.join(work, 'thief');
    mkdirSync(path.join(thief, 'etc/sno-relocate'), { recursive: true });
    // another machine: its own host key, the stolen credential
    cpSync(hostKey(nodes.other.root), hostKey(thief), { recursive: true });
    cpSync(path.join(nodes.mine.root, NODE_KEY_CREDENTIAL), path.join(thief, NODE_KEY_CREDENTIAL));
    const unsealer = await nodeUnsealer(nodeCtx(thief));
    await expect(admitSite(dir, { ...offNode(new Date()), unseal: unsealer! })).rejects.toThrow(
      `the node key ${NODE_KEY_CREDENTIAL} does not open on this machine`,
    );
    // prepare on that machine makes it a key of its own rather than keep one it cannot open
    cpSync(
      path.join(nodes.mine.root, 'etc/sno-relocate/node-key.json'),
      path.join(thief, 'etc/sno-relocate/node-key.json'),
    );
    const own = await ensureNodeKey(nodeCtx(thief), new Date());
    expect(own.recipient).not.toBe(nodes.mine.key!.recipient);
    expect(await nodeUnsealer(nodeCtx(thief))).toBeDefined();
  });
});

describe('a sealed stick', () => {
  it('holds no plaintext secret, and sign says what it sealed for which node', () => {
    const dir = path.join(work, 'listed');
    cpSync(plain, dir, { recursive: true });
    expect(plaintextOn(dir).length).toBe(secrets.length);
    const signed = runCli([
      'sign',
      '--key',
      `${factoryKey}.key`,
      '--bind-serial',
      'SN1234',
      '--node-key',
      nodes.mine.key!.recipient,
      dir,
    ]);
    expect(signed.code, signed.stderr).toBe(0);
    expect(signed.stdout).toContain(
      'sealed $.spec.pullSecretFile, $.spec.certificates.ingress.keyFile, $.spec.access.siteCA.keyFile, $.spec.proxy for node SN1234',
    );
    expect(plaintextOn(dir), readdirSync(dir).join(' ')).toEqual([]);
    expect(readFileSync(path.join(dir, 'ingress.key'), 'utf8')).toMatch(/^-----BEGIN AGE ENCRYPTED FILE-----\n/);
  });

  it('is validated on a workstation without the key, its sealed fields listed', () => {
    const dir = sealedSite('workstation');
    const result = runCli(['validate', dir]);
    expect(result.code, result.stderr).toBe(0);
    for (const field of [
      '$.spec.pullSecretFile',
      '$.spec.certificates.ingress.keyFile',
      '$.spec.access.siteCA.keyFile',
      '$.spec.proxy',
    ])
      expect(result.stdout).toContain(`warning: ${field}: sealed for node SN1234`);
    expect(result.stdout).toContain('site-config valid: site store-0042');
  });

  it('is opened in memory by its node: every secret as it was before sealing', async () => {
    const dir = sealedSite('opened');
    const validated = onNode(nodes.mine.root, 'validate', dir);
    expect(validated.code, validated.stderr).toBe(0);
    expect(validated.stdout).not.toContain('sealed for');
    const loaded = await admitSite(dir, {
      ...offNode(new Date()),
      unseal: (await nodeUnsealer(nodeCtx(nodes.mine.root)))!,
    });
    expect(loaded.sealed).toBeUndefined();
    expect(loaded.site.pullSecret).toEqual(JSON.parse(secrets[0]!.text));
    expect(loaded.site.certificates.ingress?.keyPem.trim()).toBe(secrets[1]!.text.trim());
    expect(loaded.site.access?.siteCa?.keyPem.trim()).toBe(secrets[2]!.text.trim());
    expect(loaded.site.proxy?.httpsProxy).toBe(PROXY);
  });

  it("drops the node's identity when admission ends, admitted or refused", async () => {
    const dir = sealedSite('forgotten');
    const unsealer = (await nodeUnsealer(nodeCtx(nodes.mine.root)))!;
    const forgotten: string[] = [];
    const watched = { open: unsealer.open, forget: () => (unsealer.forget(), forgotten.push('after admission')) };
    await admitSite(dir, { ...offNode(new Date()), unseal: watched });
    writeFileSync(path.join(dir, 'ingress.key'), '-----BEGIN AGE ENCRYPTED FILE-----\nbroken\n');
    await expect(admitSite(dir, { ...offNode(new Date()), unseal: watched })).rejects.toThrow('not armored age');
    expect(forgotten).toEqual(['after admission', 'after admission']);
  });

  it('is refused on another node, naming the node it is sealed for, with nothing changed', () => {
    const dir = sealedSite('elsewhere');
    const before = snapshotTree(nodes.other.root);
    const result = onNode(nodes.other.root, 'validate', dir);
    expect(result.code).toBe(3);
    expect(result.stderr).toContain('sealed for node SN1234, not for this node (SN9999)');
    expect(result.stderr).toContain('nothing on the host was changed');
    expect(snapshotTree(nodes.other.root)).toEqual(before);
  });

  it('is refused by plan and run on a node without a node key, with nothing changed', () => {
    const dir = sealedSite('keyless', ['--bind-serial', 'SN5555']);
    const before = snapshotTree(nodes.keyless.root);
    for (const command of ['plan', 'run']) {
      const result = onNode(nodes.keyless.root, command, dir);
      expect(result.code, command).toBe(3);
      expect(result.stderr).toContain(
        `sealed for node SN5555, and this node has no node key (${NODE_KEY_CREDENTIAL}) to open them`,
      );
    }
    const after = snapshotTree(nodes.keyless.root);
    // the run lock is taken and released around the refusal: nothing else
    expect(after).toEqual(before);
  });
});

describe("Debian's age CLI", () => {
  it('opens what the agent sealed, with the identity only the node can unseal', () => {
    const dir = sealedSite('age-opens');
    const identity = identityFile(nodes.mine.root);
    const opened = execFileSync('age', ['--decrypt', '-i', identity, path.join(dir, 'pull-secret.json')], {
      encoding: 'utf8',
    });
    expect(opened).toBe(secrets[0]!.text);
    const site = yaml.load(readFileSync(path.join(dir, 'site-config.yaml'), 'utf8')) as {
      spec: { proxy: string };
    };
    const proxy = execFileSync('age', ['--decrypt', '-i', identity], { input: site.spec.proxy });
    expect(JSON.parse(proxy.toString('utf8'))).toEqual({ httpsProxy: PROXY, noProxy: '.store42.example.com' });
  });

  it('seals what the node opens', async () => {
    const dir = path.join(work, 'age-seals');
    cpSync(plain, dir, { recursive: true });
    execFileSync('age', [
      '--encrypt',
      '--armor',
      '-r',
      nodes.mine.key!.recipient,
      '-o',
      path.join(dir, 'ingress.key'),
      path.join(plain, 'ingress.key'),
    ]);
    const loaded = await admitSite(dir, {
      ...offNode(new Date()),
      unseal: (await nodeUnsealer(nodeCtx(nodes.mine.root)))!,
    });
    expect(loaded.site.certificates.ingress?.keyPem.trim()).toBe(secrets[1]!.text.trim());
  });
});

/** what a run records before its first change, for the site-config admitted on the node */
const applied = async (root: string, dir: string) => {
  const ctx = nodeCtx(root);
  const unseal = await nodeUnsealer(ctx);
  const loaded = await admitSite(dir, { ...offNode(new Date()), ...(unseal && { unseal }) });
  await beforeFirstChange({ fs: ctx.fs, clock: systemClock, stateDir: '/var/lib/sno-relocate' }, loaded);
};

describe('status', () => {
  it("says a node's key and that the applied stick's secrets came sealed for it", async () => {
    await applied(nodes.mine.root, sealedSite('status-sealed'));
    const status = onNode(nodes.mine.root, 'status');
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toContain(`Node key: ${nodes.mine.key!.recipient} (sealed with the host key)\n`);
    expect(status.stdout).toContain(
      'Secrets:  site store-0042: sealed for this node, opened in memory ($.spec.proxy, $.spec.pullSecretFile, $.spec.certificates.ingress.keyFile, $.spec.access.siteCA.keyFile)\n',
    );
    const json = JSON.parse(onNode(nodes.mine.root, 'status', '-o', 'json').stdout) as { secrets: object };
    expect(json.secrets).toMatchObject({ nodeKey: { sealing: 'host' }, applied: { site: 'store-0042' } });
  });

  it('says a node shipped without a node key takes its secrets in clear, on the word of the site-config', async () => {
    const root = layNode('shipped-before', 'SN7777');
    await applied(root, plain);
    expect(onNode(root, 'status').stdout).toContain(
      `Node key: none (shipped before node keys): its sticks carry secrets in clear\nSecrets:  site store-0042: in clear on the stick, as its spec.secretsInClear says (${CLEAR_FIELDS})\n`,
    );
  });
});

/** every secret of the plaintext site, as the node names the fields it finds in clear */
const CLEAR_FIELDS =
  '$.spec.pullSecretFile, $.spec.certificates.ingress.keyFile, $.spec.access.siteCA.keyFile, $.spec.proxy';

describe('secrets in clear', () => {
  /** the plaintext site signed for the node, with spec.secretsInClear as given (absent: left out) */
  function clearSite(name: string, serial: string, secretsInClear: boolean | undefined): string {
    const dir = path.join(work, name);
    cpSync(plain, dir, { recursive: true });
    const file = path.join(dir, 'site-config.yaml');
    const doc = yaml.load(readFileSync(file, 'utf8')) as { spec: Record<string, unknown> };
    if (secretsInClear === undefined) delete doc.spec.secretsInClear;
    else doc.spec.secretsInClear = secretsInClear;
    writeFileSync(file, yaml.dump(doc));
    const signed = runCli(['sign', '--key', `${factoryKey}.key`, '--bind-serial', serial, dir]);
    expect(signed.code, signed.stderr).toBe(0);
    return dir;
  }
  /** a node factory prepare made before node keys: its record, no key */
  function shippedWithoutKey(name: string, serial: string): string {
    const root = layNode(name, serial);
    writeFileSync(
      path.join(root, FACTORY_RECORD),
      recordText(makeRecord('sno-factory', '192.168.127.10/24', new Date('2026-01-05T08:00:00Z'))),
    );
    return root;
  }

  it('are refused by a node with a key, whatever the site-config says, with nothing changed', () => {
    const { root } = nodes.mine;
    const before = hostTree(root);
    for (const [command, secretsInClear] of [
      ['validate', true],
      ['plan', undefined],
      ['run', true],
    ] as const) {
      const result = onNode(root, command, clearSite(`keyed-${command}`, 'SN1234', secretsInClear));
      expect(result.code, command).toBe(3);
      expect(result.stderr).toContain(
        `site-config refused: ${CLEAR_FIELDS} in clear on the stick, and this node has a node key (${NODE_KEY_CREDENTIAL}): it takes secrets sealed to it only (sign --node-key, or render's node-key column), whatever $.spec.secretsInClear says; nothing on the host was changed`,
      );
    }
    expect(hostTree(root)).toEqual(before);
  });

  it('are refused by a node shipped without a key unless the site-config says so, naming the field', () => {
    const root = shippedWithoutKey('keyless-refuses', 'SN6666');
    const before = hostTree(root);
    for (const [command, secretsInClear] of [
      ['validate', undefined],
      ['plan', false],
      ['run', undefined],
    ] as const) {
      const result = onNode(root, command, clearSite(`keyless-${command}`, 'SN6666', secretsInClear));
      expect(result.code, command).toBe(3);
      expect(result.stderr).toContain(
        `site-config refused: $.spec.secretsInClear: ${CLEAR_FIELDS} in clear on the stick, and this node, shipped without a node key, takes secrets in clear only when the site-config says so: set spec.secretsInClear: true for this node, or give it a key (factory prepare) and seal the folder to it; nothing on the host was changed`,
      );
    }
    expect(hostTree(root)).toEqual(before);
  });

  it('are taken by a node shipped without a key when the site-config says so, and status says on whose word', async () => {
    const root = shippedWithoutKey('keyless-takes', 'SN6667');
    const dir = clearSite('keyless-opted-in', 'SN6667', true);
    const validated = onNode(root, 'validate', dir);
    expect(validated.code, validated.stderr).toBe(0);
    await applied(root, dir);
    expect(onNode(root, 'status').stdout).toContain(
      `Secrets:  site store-0042: in clear on the stick, as its spec.secretsInClear says (${CLEAR_FIELDS})\n`,
    );
    const json = JSON.parse(onNode(root, 'status', '-o', 'json').stdout) as { secrets: object };
    expect(json.secrets).toMatchObject({
      nodeKey: null,
      applied: { site: 'store-0042', sealed: [], clear: CLEAR_FIELDS.split(', '), inClearByChoice: true },
    });
  });
});
