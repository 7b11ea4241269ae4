/**
 * `sno-relocate run --only node` end to end: the agent's own process against a factory-fresh root,
 * the nmstatectl stub on PATH and the test systemd/hostnamed on a private D-Bus. What a technician
 * and a support engineer would see: exit codes, the console output, the files on the node, the state
 * file, and no secret anywhere.
 */
import {
  existsSync,
  lstatSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  statSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { STEPS } from '../../src/steps/index.js';
import { KEYS_FILE } from '../../src/steps/ssh-keys.js';
import { allowErrorLog } from '../helpers/error-log.js';
import { layFactoryNode, laySingleNodeDnsmasq } from '../fixtures/factory-node.js';
import { startTestBus } from '../dbus/bus.js';
import { loopbackStoreSpec, runAgent, startAgent, STORE_KEY, writeSiteFolder } from './cli.js';
import { REPO, STATE_DIR, stubEnvironment } from './context.js';
import { factoryNetwork } from './factory-network.js';

const SECRET = 'c3RvcmU0MjpzM2NyZXQtcGFzc3dvcmQtOTk=';
const SITE_KEY = STORE_KEY;
const SPEC = loopbackStoreSpec(SECRET, 5);
const NODE_STEPS = STEPS.filter((s) => s.group === 'node').map((s) => s.name);

let bus: Awaited<ReturnType<typeof startTestBus>>;
let root: string;
let site: string;
let env: Record<string, string>;

beforeAll(async () => {
  bus = await startTestBus();
});
afterAll(() => bus?.stop());
beforeEach(async () => {
  root = mkdtempSync(path.join(tmpdir(), 'run-node-'));
  layFactoryNode(root);
  laySingleNodeDnsmasq(root);
  site = writeSiteFolder(mkdtempSync(path.join(tmpdir(), 'site-')), 'store-0042', SPEC);
  env = { ...stubEnvironment(root), DBUS_SYSTEM_BUS_ADDRESS: bus.address };
  writeFileSync(env.NMSTATECTL_STUB_STATE!, JSON.stringify({ current: factoryNetwork() }));
  await bus.services.configure({ root });
});

/** Every file under `root` (as a host path) with its size, mode and modification time. */
function snapshot(dir: string, out = new Map<string, string>(), rel = ''): Map<string, string> {
  for (const entry of readdirSync(path.join(dir, rel), { withFileTypes: true })) {
    const file = path.posix.join(rel, entry.name);
    if (entry.isDirectory()) snapshot(dir, out, file);
    else {
      const info = lstatSync(path.join(dir, file));
      out.set(`/${file}`, `${info.size} ${info.mode} ${info.mtimeMs}`);
    }
  }
  return out;
}

/** The folders a unit may write under ProtectSystem=strict: ReadWritePaths= and its own directories. */
function unitWritablePaths(unit: string): string[] {
  const values = (key: string) =>
    [...unit.matchAll(new RegExp(`^${key}=(.*)$`, 'gm'))].flatMap((m) => m[1]!.trim().split(/\s+/).filter(Boolean));
  return [
    ...values('ReadWritePaths').map((p) => p.replace(/^-/, '')),
    ...values('StateDirectory').map((d) => `/var/lib/${d}`),
    ...values('RuntimeDirectory').map((d) => `/run/${d}`),
  ];
}

const run = (extra: Record<string, string> = {}) =>
  runAgent(['run', site, '--root', root, '--only', 'node'], { ...env, ...extra });
const state = () =>
  JSON.parse(readFileSync(path.join(root, STATE_DIR, 'state.json'), 'utf8')) as {
    result: string;
    steps: Record<string, { status: string; message?: string }>;
  };
const started = async () => (await bus.services.calls()).some((c) => c.member === 'StartUnit');

describe('run --only node', () => {
  it('configures a factory node, opens the kubelet gate, and finds nothing to do the second time', async () => {
    const first = run();
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toBe('site store-0042: succeeded\n');
    expect(Object.entries(state().steps).map(([name, s]) => [name, s.status])).toEqual(
      NODE_STEPS.map((s) => [s, 'done']),
    );
    expect(readFileSync(path.join(root, KEYS_FILE), 'utf8')).toContain(SITE_KEY);
    // the node's pull secret is the machine-config daemon's to write, from the cluster's
    expect(existsSync(path.join(root, 'var/lib/kubelet/config.json'))).toBe(false);
    expect(readFileSync(path.join(root, 'etc/hostname'), 'utf8')).toBe('sno-store42\n');
    expect(
      readFileSync(path.join(root, 'etc/systemd/system/kubelet.service.d/30-sno-relocate-node-ip.conf'), 'utf8'),
    ).toContain('KUBELET_NODE_IP=192.168.127.10');
    expect(readFileSync(path.join(root, 'etc/NetworkManager/system-connections/br-ex.nmconnection'), 'utf8')).toContain(
      'address1=192.168.127.10/24',
    );
    expect(await started()).toBe(true);
    expect(first.stderr).toContain('kubelet gate opened');

    const second = run();
    expect(second.code, second.stderr).toBe(0);
    expect(second.stderr.match(/nothing to do/g)).toHaveLength(NODE_STEPS.length);

    for (const output of [
      first.stdout,
      first.stderr,
      second.stderr,
      readFileSync(path.join(root, STATE_DIR, 'state.json'), 'utf8'),
    ])
      expect(output).not.toContain(SECRET);

    // status tells the partial run apart: the node steps were asked for, the cluster steps were not
    const status = runAgent(['status', '--root', root], env);
    const clusterSteps = STEPS.filter((s) => s.group === 'cluster').map((s) => s.name);
    expect(status.stdout).toContain('Result:   succeeded (partial run)\n');
    expect(status.stdout).toContain(
      `Asked for: ${NODE_STEPS.join(', ')} (${NODE_STEPS.length} of ${STEPS.length} steps)`,
    );
    expect(status.stdout).toContain(`Not asked for: ${clusterSteps.join(', ')}`);
    for (const step of clusterSteps) expect(status.stdout).toMatch(new RegExp(`^${step} +not asked for$`, 'm'));
    expect(status.stdout).not.toContain('pending');
  });

  it("writes only inside the agent unit's writable folders (ProtectSystem=strict)", () => {
    // every node step with work to do: the site's NTP and machine network too
    const network = SPEC.network as Record<string, unknown>;
    site = writeSiteFolder(mkdtempSync(path.join(tmpdir(), 'site-')), 'store-0042', {
      ...SPEC,
      chronyConfig: 'server ntp.store42.example.com iburst\n',
      network: { ...network, machineNetworks: ['10.42.0.0/24'] },
    });
    const before = snapshot(root);
    expect(run().code).toBe(0);
    const after = snapshot(root);
    const changed = [...new Set([...before.keys(), ...after.keys()])].filter((f) => before.get(f) !== after.get(f));
    // written by the services the agent asks over D-Bus, outside its sandbox, and the stub's own state
    const byOthers = ['/etc/hostname', `/${path.basename(env.NMSTATECTL_STUB_STATE!)}`];
    const writable = unitWritablePaths(readFileSync(path.join(REPO, 'systemd/sno-relocate.service'), 'utf8'));
    const outside = changed.filter(
      (f) => !byOthers.includes(f) && !writable.some((w) => f === w || f.startsWith(`${w}/`)),
    );
    expect(changed).toEqual(
      expect.arrayContaining(['/etc/default/nodeip-configuration', '/etc/sno-relocate/chrony.conf']),
    );
    expect(changed.length).toBeGreaterThan(5);
    expect(outside).toEqual([]);
  });

  it('rolls the network back, keeps kubelet shut and exits 1 when the site network does not hold; the next run resumes', async () => {
    const failed = run({ NMSTATECTL_STUB_LOSE_ADDRESSES: '1' });
    expect(failed.code).toBe(1);
    expect(failed.stderr).toContain('network checks failed after 5 s');
    expect(failed.stderr).toContain('interfaces[br-ex].ipv4.address is (none), want 10.42.0.20/24, 192.168.127.10/24');
    expect(failed.stderr).toContain('rolled back to the previous network');
    expect(state()).toMatchObject({
      result: 'failed',
      steps: { 'ssh-keys': { status: 'done' }, network: { status: 'failed' } },
    });
    expect(Object.keys(state().steps)).not.toContain('kubelet');
    expect(await started()).toBe(false);
    expect(JSON.parse(readFileSync(env.NMSTATECTL_STUB_STATE!, 'utf8')).current).toEqual(factoryNetwork());

    const resumed = run();
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(await started()).toBe(true);
  });

  it('holds at a named point for power-cut tests; killed there, it loses nothing and the next run resumes', async () => {
    const point = 'state-write:hostname:done';
    const agent = startAgent(['run', site, '--root', root, '--only', 'node'], { ...env, SNO_RELOCATE_HOLD_AT: point });
    const exited = once(agent, 'close');
    const held = path.join(root, 'run/sno-relocate/held');
    await expect.poll(() => existsSync(held) && readFileSync(held, 'utf8'), { timeout: 60_000 }).toBe(`${point}\n`);
    agent.kill('SIGKILL');
    await exited;
    // the record of hostname done was written beside the state file, never renamed into place
    expect(state().steps.hostname?.status).toBe('running');
    const stateDir = path.join(root, STATE_DIR);
    expect(readdirSync(stateDir).filter((f) => f.endsWith('.tmp'))).toHaveLength(1);

    const resumed = run();
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(state().steps.hostname).toMatchObject({ status: 'done', attempts: 1 });
    expect(state().steps['ssh-keys']).toMatchObject({ status: 'done', attempts: 1 });
    expect(readdirSync(stateDir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });

  it('repairs NetworkManager keyfiles left empty by a power cut after a run recorded as done', async () => {
    expect(run().code).toBe(0);
    const keyfile = path.join(root, 'etc/NetworkManager/system-connections/br-ex.nmconnection');
    truncateSync(keyfile, 0);
    const repaired = run();
    expect(repaired.code, repaired.stderr).toBe(0);
    expect(repaired.stderr).toContain(
      'removed the empty keyfile /etc/NetworkManager/system-connections/br-ex.nmconnection',
    );
    expect(statSync(keyfile).size).toBeGreaterThan(0);
  });

  it('plans every node step as data, changing nothing and showing no secret', () => {
    const plan = runAgent(['plan', site, '--root', root, '--only', 'node', '-o', 'json'], env);
    expect(plan.code, plan.stderr).toBe(0);
    const doc = JSON.parse(plan.stdout) as { steps: { step: string; action: string }[] };
    // the site gives no machine networks and no chrony.conf: those two steps have nothing to do; under
    // --root no chronyd is the node's, and the clock (after the build, the lower bound) is plausible
    const idle = ['node-ip-hint', 'ntp', 'clock'];
    expect(doc.steps.map((s) => [s.step, s.action])).toEqual(
      NODE_STEPS.map((s) => [s, idle.includes(s) ? 'noop' : 'change']),
    );
    expect(plan.stdout).not.toContain(SECRET);
    expect(readFileSync(path.join(root, 'etc/hostname'), 'utf8')).toBe('sno-factory\n');
  });

  it('keeps the kubelet gate: open for the site whose node steps passed, closed at boot while a new one waits', async () => {
    const marker = path.join(root, STATE_DIR, 'kubelet-gate');
    const gate = (folder: string) => runAgent(['gate', folder, '--root', root], env);
    // a factory node: closed, and a waiting site-config keeps it so
    expect(gate(site).stdout).toBe('kubelet gate closed until the node steps of site-config store-0042 pass\n');
    expect(existsSync(marker)).toBe(false);

    expect(run().code).toBe(0);
    const opened = readFileSync(marker, 'utf8');
    expect(opened).toMatch(/^[0-9a-f]{64}\n$/);
    // the same stick left in: the gate stays open, kubelet starts at the next boot
    expect(gate(site).stdout).toBe('kubelet gate open: site-config store-0042 is the one whose node steps passed\n');
    expect(readFileSync(marker, 'utf8')).toBe(opened);

    // an unusable stick (invalid) never keeps kubelet down; the journal still says what is wrong with it
    allowErrorLog(/site-config: \$\.spec\.hostname: not a valid DNS name/, /site-config is invalid; nothing/);
    const broken = writeSiteFolder(mkdtempSync(path.join(tmpdir(), 'site-')), 'store-0042', { ...SPEC, hostname: '-' });
    const left = gate(broken);
    expect(left.code).toBe(0);
    expect(left.stdout).toMatch(/^kubelet gate left as it is: the site-config found cannot be used \(/);
    expect(readFileSync(marker, 'utf8')).toBe(opened);

    // a second stick with another site: closed before kubelet starts, opened again by its run
    const second = writeSiteFolder(mkdtempSync(path.join(tmpdir(), 'site-')), 'store-0043', {
      ...SPEC,
      hostname: 'sno-store43',
    });
    const closed = gate(second);
    expect(closed.stdout).toBe('kubelet gate closed: site-config store-0043 waits for its node steps\n');
    expect(closed.stderr).toContain('kubelet gate closed');
    expect(existsSync(marker)).toBe(false);
    const rerun = runAgent(['run', second, '--root', root, '--only', 'node'], env);
    expect(rerun.code, rerun.stderr).toBe(0);
    expect(readFileSync(marker, 'utf8')).not.toBe(opened);
    expect(gate(second).stdout).toBe('kubelet gate open: site-config store-0043 is the one whose node steps passed\n');
  });
});
