/**
 * Versions that only go forward, and revoked signing keys, through the built executable: sticks
 * signed with generations, a node that records the generation a run starts applying, and the
 * node's trust folder with a revocation list. Each refusal exits 3 with its reason and changes
 * nothing under the node's root.
 */
import { appendFileSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { admitSite } from '../../src/config/admit.js';
import { systemClock } from '../../src/ports/clock.js';
import { createLogger } from '../../src/log/logger.js';
import { createRootFs } from '../../src/ports/fs.js';
import { beforeFirstChange } from '../../src/trust/admitted.js';
import { checkTrust } from '../../src/trust/check.js';
import { GENERATION_FILE } from '../../src/trust/generation.js';
import { REVOKED_KEYS } from '../../src/trust/revocation.js';
import { agentSources, optionsFromEnv } from '../../scripts/render-machineconfigs.js';
import { renderMachineConfigs } from '../../src/node/machineconfig.js';
import { layFactoryNode } from '../fixtures/factory-node.js';
import { EXAMPLE, runCli } from '../helpers/cli.js';
import { snapshotTree } from '../helpers/tree.js';

const STATE_DIR = '/var/lib/sno-relocate';
let work: string;
let root: string;
let factoryKey: string;
let n = 0;

/** a copy of the example signed for this node with `generation`; `edit` changes it before signing */
function stick(generation: number | undefined, edit?: (dir: string) => void): string {
  const dir = path.join(work, `stick-${(n += 1)}`);
  cpSync(EXAMPLE, dir, { recursive: true });
  edit?.(dir);
  const flags = generation === undefined ? [] : ['--generation', String(generation)];
  const signed = runCli(['sign', '--key', `${factoryKey}.key`, '--bind-serial', 'SN1234', ...flags, dir]);
  expect(signed.code, signed.stderr).toBe(0);
  return dir;
}

/** what run does once a stick is admitted, before its first change: the generation is recorded */
async function applied(dir: string, at: Date): Promise<void> {
  const rt = {
    fs: createRootFs(root),
    clock: { ...systemClock, now: () => at },
    stateDir: STATE_DIR,
    log: createLogger({ journal: false, write: () => undefined }),
    banner: { show: async () => undefined },
  };
  const loaded = await admitSite(dir, { now: at, trust: (l) => checkTrust(rt, l), factoryRecord: undefined });
  await beforeFirstChange(rt, loaded);
}

const validate = (dir: string) => runCli(['validate', dir, '--root', root]);

beforeAll(() => {
  work = mkdtempSync(path.join(tmpdir(), 'generation-'));
  factoryKey = path.join(work, 'factory');
  expect(runCli(['keygen', '--out', factoryKey]).code).toBe(0);
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

beforeEach(() => {
  root = path.join(work, `root-${(n += 1)}`);
  layFactoryNode(root);
  mkdirSync(path.join(root, 'sys/class/dmi/id'), { recursive: true });
  writeFileSync(path.join(root, 'sys/class/dmi/id/product_serial'), 'SN1234\n');
  mkdirSync(path.join(root, 'etc/sno-relocate/trust'), { recursive: true });
  cpSync(`${factoryKey}.pub`, path.join(root, 'etc/sno-relocate/trust/factory.pub'));
});

describe('generations', () => {
  it('refuse an older stick once a newer one was applied, saying which and when, with nothing changed', async () => {
    const older = stick(6);
    await applied(stick(7), new Date('2027-01-12T09:30:00Z'));
    const record = JSON.parse(readFileSync(path.join(root, STATE_DIR, GENERATION_FILE), 'utf8')) as object;
    expect(record).toMatchObject({ site: 'store-0042', generation: 7, appliedAt: '2027-01-12T09:30:00.000Z' });
    const before = snapshotTree(root);
    const result = validate(older);
    expect(result.code).toBe(3);
    expect(result.stderr).toContain(
      'site-config refused: generation 6 is older than the 7 applied on 2027-01-12; nothing on the host was changed',
    );
    expect(snapshotTree(root)).toEqual(before);
  });

  it('take the same stick plugged in again as a rerun, and keep the day it was first applied', async () => {
    const same = stick(7);
    await applied(same, new Date('2027-01-12T09:30:00Z'));
    await applied(same, new Date('2027-02-01T10:00:00Z'));
    expect(validate(same).code).toBe(0);
    expect(readFileSync(path.join(root, STATE_DIR, GENERATION_FILE), 'utf8')).toContain('2027-01-12T09:30:00.000Z');
  });

  it('refuse the same generation with other contents, and take a newer one', async () => {
    await applied(stick(7), new Date('2027-01-12T09:30:00Z'));
    const changed = stick(7, (dir) => appendFileSync(path.join(dir, 'network.yaml'), '# another network\n'));
    const refused = validate(changed);
    expect(refused.code).toBe(3);
    expect(refused.stderr).toContain('generation 7 was applied on 2027-01-12 with other contents');
    const newer = stick(8, (dir) => appendFileSync(path.join(dir, 'network.yaml'), '# another network\n'));
    expect(validate(newer).code).toBe(0);
    await applied(newer, new Date('2027-02-01T10:00:00Z'));
    expect(validate(changed).stderr).toContain('generation 7 is older than the 8 applied on 2027-02-01');
  });

  it('refuse a stick without a generation once the node applied one', async () => {
    const unversioned = stick(undefined);
    expect(validate(unversioned).code).toBe(0);
    await applied(stick(3), new Date('2027-01-12T09:30:00Z'));
    const refused = validate(unversioned);
    expect(refused.code).toBe(3);
    expect(refused.stderr).toContain('the signature carries no generation, and this node applied generation 3');
  });

  it('are refused as a usage error when not a whole number', () => {
    const dir = path.join(work, 'bad-generation');
    cpSync(EXAMPLE, dir, { recursive: true });
    const result = runCli(['sign', '--key', `${factoryKey}.key`, '--generation', '0', dir]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('--generation: expected a whole number, 1 or more, got "0"');
  });
});

describe('the revocation list', () => {
  const keyId = () => {
    const signed = runCli(['sign', '--key', `${factoryKey}.key`, path.join(work, 'probe')]);
    return /with key (sha256:[0-9a-f]{64})/.exec(signed.stdout)![1]!;
  };
  beforeAll(() => cpSync(EXAMPLE, path.join(work, 'probe'), { recursive: true }));

  it('refuses a stick signed by a revoked key whose public key is still installed', () => {
    const dir = stick(1);
    expect(validate(dir).code).toBe(0);
    writeFileSync(path.join(root, REVOKED_KEYS), `# lost with the line-3 laptop\n${keyId()}  # 2027-01-20\n`);
    const before = snapshotTree(root);
    const result = validate(dir);
    expect(result.code).toBe(3);
    expect(result.stderr).toContain(`it was signed by key ${keyId()} (factory.pub), which is revoked`);
    expect(snapshotTree(root)).toEqual(before);
  });

  it('travels to the node with the anchors in the MachineConfig, checked as the node reads it', async () => {
    const trust = path.join(work, 'trust-folder');
    mkdirSync(trust, { recursive: true });
    cpSync(`${factoryKey}.pub`, path.join(trust, 'factory-2026.pub'));
    const list = `# lost with the line-3 laptop\n${keyId()}\n`;
    writeFileSync(path.join(trust, 'revoked-keys'), list);
    const files = renderMachineConfigs(agentSources(), optionsFromEnv({ SNO_RELOCATE_TRUST_DIR: trust }))
      .flatMap((mc) => mc.spec.config.storage?.files ?? [])
      .filter((f) => f.path.startsWith('/etc/sno-relocate/trust/'));
    expect(files.map((f) => f.path).sort()).toEqual([
      '/etc/sno-relocate/trust/factory-2026.pub',
      '/etc/sno-relocate/trust/revoked-keys',
    ]);
    const revoked = files.find((f) => f.path.endsWith('revoked-keys'))!;
    expect(await (await fetch(revoked.contents.source)).text()).toBe(list);
    writeFileSync(path.join(trust, 'revoked-keys'), 'factory-2025.pub\n');
    expect(() => optionsFromEnv({ SNO_RELOCATE_TRUST_DIR: trust })).toThrow(
      'revoked-keys line 1 is not a key id (sha256:<64 hex digits>)',
    );
  });

  it('refuses every stick while a line of it is not a key id', () => {
    const dir = stick(1);
    writeFileSync(path.join(root, REVOKED_KEYS), `${keyId()}\nfactory-2025.pub\n`);
    const result = validate(dir);
    expect(result.code).toBe(3);
    expect(result.stderr).toContain(`${REVOKED_KEYS} line 2 is not a key id (sha256:<64 hex digits>)`);
  });
});
