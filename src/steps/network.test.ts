/**
 * The network step against a temporary root with the nmstatectl stub on PATH (it keeps the network
 * state, checkpoints and NetworkManager keyfiles), real ping and getent, and a clock whose waits
 * pass at once.
 */
import { mkdirSync, readdirSync, readFileSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { NmstateState } from '../base/nmstate.js';
import { MessageId } from '../log/events.js';
import { factoryNetwork } from '../../test/node/factory-network.js';
import { STATE_DIR, testNode, testSite } from '../../test/node/context.js';
import { DISPATCHER_SCRIPT, renderDispatcherScript } from '../node/internal-ip.js';
import {
  KEYFILE_DIR,
  type NetworkDecision,
  type NetworkView,
  networkStep,
  resolveDatabases,
  REVERT_STATE_FILE,
} from './network.js';
import { hashOf } from '../engine/state.js';
import { allowErrorLog } from '../../test/helpers/error-log.js';
import { planOf } from '../engine/engine.js';

// the gateway is this machine's loopback address, so that the ping check really pings
const STORE: NmstateState = {
  interfaces: [
    {
      name: 'br-ex',
      type: 'ovs-interface',
      state: 'up',
      ipv4: { enabled: true, dhcp: false, address: [{ ip: '10.42.0.20', 'prefix-length': 24 }] },
      ipv6: { enabled: false },
    },
  ],
  routes: { config: [{ destination: '0.0.0.0/0', 'next-hop-address': '127.0.0.1', 'next-hop-interface': 'br-ex' }] },
  'dns-resolver': { config: { server: ['10.42.0.53'], search: ['store42.example.com'] } },
};
const site = testSite({
  network: {
    nmstate: STORE,
    internalIP: '192.168.127.10/24',
    verify: { pingGateway: true, resolve: ['localhost'], timeoutSeconds: 30 },
  },
});

const stub = (env: Record<string, string>) =>
  JSON.parse(readFileSync(env.NMSTATECTL_STUB_STATE!, 'utf8')) as {
    current: NmstateState;
    checkpoints: unknown[];
    calls: string[][];
  };
const events = (logs: string[]) =>
  logs.map((l) => JSON.parse(l) as { event?: string; msgId?: string; msg: string }).filter((l) => l.event);

describe('network', () => {
  it('plans the differences as data, then applies under a checkpoint, checks, commits and flushes', async () => {
    const node = testNode({ site, network: factoryNetwork() });
    const plan = await planOf(networkStep, node.ctx);
    expect(plan).toEqual({
      action: 'change',
      summary: 'apply the site network (6 difference(s)) with checkpoint and rollback',
      changes: [
        {
          action: 'apply',
          target: 'nmstate',
          summary: 'checks: the state holds, the gateway answers ping, localhost resolve; within 30 s, else roll back',
          diff: [
            '- interfaces[br-ex].ipv4.dhcp: true',
            '+ interfaces[br-ex].ipv4.dhcp: false',
            '- interfaces[br-ex].ipv4.address: 192.168.1.50/24, 192.168.127.10/24',
            '+ interfaces[br-ex].ipv4.address: 10.42.0.20/24, 192.168.127.10/24',
            '- interfaces[br-ex].ipv6.enabled: true',
            '+ interfaces[br-ex].ipv6.enabled: false',
            '- routes.config[0.0.0.0/0 via 127.0.0.1 dev br-ex]: absent',
            '+ routes.config[0.0.0.0/0 via 127.0.0.1 dev br-ex]: present',
            '- dns-resolver.config.server: 192.168.1.1',
            '+ dns-resolver.config.server: 10.42.0.53',
            '- dns-resolver.config.search: (none)',
            '+ dns-resolver.config.search: store42.example.com',
          ],
        },
      ],
      // no br-ex on this machine: no internal IP there yet that the change must keep
      decision: {
        leftovers: { empty: [], temporary: [] },
        apply: {
          desired: expect.objectContaining({ routes: STORE.routes }),
          revert: factoryNetwork(),
          checks: expect.objectContaining({
            pingGateway: true,
            resolve: ['localhost'],
            timeoutSeconds: 30,
            internalIPs: ['192.168.127.10/24'],
            internalRequired: [],
          }),
        },
      },
    });

    const state = await node.run([networkStep]);
    expect(state.steps.network?.status).toBe('done');
    const after = stub(node.env);
    expect(after.checkpoints).toEqual([]);
    expect(after.calls.filter((c) => c[0] !== 'show')).toEqual([
      ['apply', '--no-commit', '--timeout', '90'],
      ['commit', '/org/freedesktop/NetworkManager/Checkpoint/1'],
    ]);
    // the internal IP rides along on br-ex, so nmstate keeps it
    expect(
      after.current.interfaces!.find((i) => i.name === 'br-ex' && i.type === 'ovs-interface')!.ipv4!.address,
    ).toEqual([
      { ip: '192.168.127.10', 'prefix-length': 24 },
      { ip: '10.42.0.20', 'prefix-length': 24 },
    ]);
    expect(readFileSync(path.join(node.root, KEYFILE_DIR, 'br-ex.nmconnection'), 'utf8')).toContain(
      'address1=192.168.127.10/24',
    );

    const revert = path.join(node.root, STATE_DIR, REVERT_STATE_FILE);
    expect(statSync(revert).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(revert, 'utf8')).state).toEqual(factoryNetwork());
    expect(node.logs.join('\n')).toContain(`previous network state saved in ${revert}`);
    expect(await planOf(networkStep, node.ctx)).toEqual({
      action: 'noop',
      reason: 'the node already runs the site network (1 interface(s) as desired)',
    });
  });

  it('rolls back and fails with the reason when the applied network does not hold', async () => {
    allowErrorLog(/"event":"networkRollback"/);
    const node = testNode({ site, network: factoryNetwork(), env: { NMSTATECTL_STUB_LOSE_ADDRESSES: '1' } });
    const failed = node.run([networkStep]);
    await expect(failed).rejects.toMatchObject({ exitCode: 1, step: 'network' });
    await expect(failed).rejects.toThrow(
      'network: checks failed after 30 s (interfaces[br-ex].ipv4.address is (none), want 10.42.0.20/24, 192.168.127.10/24); rolled back to the previous network',
    );
    const after = stub(node.env);
    expect(after.current).toEqual(factoryNetwork());
    expect(after.calls.filter((c) => c[0] !== 'show')).toEqual([
      ['apply', '--no-commit', '--timeout', '90'],
      ['rollback', '/org/freedesktop/NetworkManager/Checkpoint/1'],
    ]);
    expect(events(node.logs)).toContainEqual(
      expect.objectContaining({ event: 'networkRollback', msgId: MessageId.networkRollback }),
    );
    // the checks were retried, with waits that grow, until the site's timeout
    expect(node.logs.filter((l) => l.includes('network checks not passing yet')).length).toBeGreaterThan(3);
  });

  it("fails with nmstatectl's own reason when apply is refused", async () => {
    allowErrorLog(/"event":"networkRollback"/);
    const node = testNode({
      site,
      network: factoryNetwork(),
      env: { NMSTATECTL_STUB_FAIL_APPLY: 'br-ex: activation failed' },
    });
    await expect(node.run([networkStep])).rejects.toThrow(
      'network: applying the site network failed: nmstatectl failed (exit 1): NmstateError: VerificationError: br-ex: activation failed (the previous network is restored)',
    );
    expect(events(node.logs).map((e) => e.event)).toContain('networkRollback');
  });

  it('keeps the internal IP first in a br-ex profile that takes its site address from DHCP', async () => {
    const dhcp: NmstateState = {
      interfaces: [{ name: 'br-ex', type: 'ovs-interface', state: 'up', ipv4: { enabled: true, dhcp: true } }],
    };
    // a node relocated before to a site with a static address, now moved to a DHCP site
    const node = testNode({ site, network: factoryNetwork() });
    await node.run([networkStep]);
    node.ctx.site = testSite({
      network: {
        nmstate: dhcp,
        internalIP: '192.168.127.10/24',
        verify: { pingGateway: false, resolve: [], timeoutSeconds: 30 },
      },
    });
    const state = await node.run([networkStep]);
    expect(state.steps.network?.status).toBe('done');
    // what NetworkManager activates: method auto for the lease, the internal IP as the first static address
    expect(readFileSync(path.join(node.root, KEYFILE_DIR, 'br-ex.nmconnection'), 'utf8')).toContain(
      '[ipv4]\nmethod=auto\naddress1=192.168.127.10/24\n',
    );
    expect(await planOf(networkStep, node.ctx)).toMatchObject({ action: 'noop' });
  });

  it("keeps the internal IP the node pins when the site-config names none (an image-based install's media)", async () => {
    // a factory node: the dispatcher script keeps the internal IP on br-ex whatever the site network
    const node = testNode({ site, network: factoryNetwork() });
    mkdirSync(path.dirname(path.join(node.root, DISPATCHER_SCRIPT)), { recursive: true });
    writeFileSync(path.join(node.root, DISPATCHER_SCRIPT), renderDispatcherScript('192.168.127.10/24'), {
      mode: 0o755,
    });
    await node.run([networkStep]);
    const { internalIP: _none, ...network } = site.network;
    node.ctx.site = testSite({ network });
    expect(await planOf(networkStep, node.ctx)).toMatchObject({ action: 'noop' });
    const elsewhere = structuredClone(STORE);
    elsewhere.interfaces![0]!.ipv4!.address = [{ ip: '10.43.0.20', 'prefix-length': 24 }];
    node.ctx.site = testSite({ network: { ...network, nmstate: elsewhere } });
    const state = await node.run([networkStep]);
    expect(state.steps.network?.status).toBe('done');
    const brEx = stub(node.env).current.interfaces!.find((i) => i.name === 'br-ex' && i.type === 'ovs-interface')!;
    expect(brEx.ipv4!.address).toEqual([
      { ip: '192.168.127.10', 'prefix-length': 24 },
      { ip: '10.43.0.20', 'prefix-length': 24 },
    ]);
  });

  it('repairs keyfiles a power cut left empty, though the run was recorded as done', async () => {
    const node = testNode({ site, network: factoryNetwork() });
    await node.run([networkStep]);
    const keyfile = path.join(node.root, KEYFILE_DIR, 'br-ex.nmconnection');
    truncateSync(keyfile, 0);
    expect(await planOf(networkStep, node.ctx)).toEqual({
      action: 'change',
      summary: 'repair 1 empty NetworkManager keyfile(s) by re-applying the site network',
      changes: [
        {
          action: 'delete',
          target: `${KEYFILE_DIR}/br-ex.nmconnection`,
          summary: 'empty keyfile (a power cut while NetworkManager wrote it); the re-apply writes it again',
        },
        {
          action: 'apply',
          target: 'nmstate',
          summary: 'checks: the state holds, the gateway answers ping, localhost resolve; within 30 s, else roll back',
          diff: [],
        },
      ],
      // the first run's record of the state before it is kept: it is for the same network
      decision: {
        leftovers: { empty: [`${KEYFILE_DIR}/br-ex.nmconnection`], temporary: [] },
        apply: { desired: expect.any(Object), checks: expect.any(Object) },
      },
    });
    const state = await node.run([networkStep]);
    expect(state.steps.network).toMatchObject({ status: 'done', attempts: 2 });
    expect(statSync(keyfile).size).toBeGreaterThan(0);
    expect(await planOf(networkStep, node.ctx)).toMatchObject({ action: 'noop' });
  });

  it("removes NetworkManager's temporary copies a power cut left, without applying the network again", async () => {
    const node = testNode({ site, network: factoryNetwork() });
    await node.run([networkStep]);
    const dir = path.join(node.root, KEYFILE_DIR);
    const keyfiles = readdirSync(dir).sort();
    // mkstemp's suffix on a profile name: the write was cut before NetworkManager's rename
    writeFileSync(path.join(dir, 'br-ex.nmconnection.PAL9Y3'), '[connection]\nid=br-ex\n');
    writeFileSync(path.join(dir, 'notes.nmconnection.bak'), 'kept');
    expect(await planOf(networkStep, node.ctx)).toEqual({
      action: 'change',
      summary: 'remove 1 temporary NetworkManager file(s) a power cut left; the node already runs the site network',
      changes: [
        {
          action: 'delete',
          target: `${KEYFILE_DIR}/br-ex.nmconnection.PAL9Y3`,
          summary:
            "NetworkManager's temporary copy of a profile (a power cut while it wrote it); NetworkManager ignores it",
        },
      ],
      decision: { leftovers: { empty: [], temporary: [`${KEYFILE_DIR}/br-ex.nmconnection.PAL9Y3`] } },
    });
    const applies = stub(node.env).calls.filter((c) => c[0] === 'apply').length;
    const state = await node.run([networkStep]);
    expect(state.steps.network).toMatchObject({ status: 'done' });
    expect(readdirSync(dir).sort()).toEqual([...keyfiles, 'notes.nmconnection.bak'].sort());
    expect(stub(node.env).calls.filter((c) => c[0] === 'apply')).toHaveLength(applies);
    expect(node.logs.join('\n')).toContain(
      "removed NetworkManager's leftover temporary file /etc/NetworkManager/system-connections/br-ex.nmconnection.PAL9Y3",
    );
    expect(await planOf(networkStep, node.ctx)).toMatchObject({ action: 'noop' });
  });

  it('keeps the revert state of the first attempt when a later attempt at the same network starts from a changed one', async () => {
    allowErrorLog(/"event":"networkRollback"/);
    const node = testNode({ site, network: factoryNetwork(), env: { NMSTATECTL_STUB_LOSE_ADDRESSES: '1' } });
    await expect(node.run([networkStep])).rejects.toThrow();
    const revert = path.join(node.root, STATE_DIR, REVERT_STATE_FILE);
    const first = readFileSync(revert, 'utf8');
    await expect(node.run([networkStep])).rejects.toThrow();
    expect(readFileSync(revert, 'utf8')).toBe(first);
    expect(node.logs.join('\n')).toContain('previous network state kept');
  });
});

describe('network decisions', () => {
  const eth0 = (dhcp: boolean) => ({
    name: 'eth0',
    type: 'ethernet',
    state: 'up' as const,
    ipv4: { enabled: true, dhcp },
  });
  const verify = { pingGateway: true, resolve: ['api.example.com'], timeoutSeconds: 20 };
  const site = testSite({ network: { nmstate: { interfaces: [eth0(true)] }, verify } });
  const desired = { interfaces: [eth0(true)] };
  const view = (parts: Partial<NetworkView> = {}): NetworkView => ({
    desired,
    current: { interfaces: [eth0(true)] },
    unsupported: [],
    internalIPs: [],
    onBrEx: [],
    leftovers: { empty: [], temporary: [] },
    ...parts,
  });
  const none = { empty: [], temporary: [] };
  const checks = (internalIPs: string[] = [], internalRequired: string[] = []) => ({
    ...verify,
    desired,
    internalIPs,
    internalRequired,
  });
  const KEYFILE = '/etc/NetworkManager/system-connections/eth0.nmconnection';
  const INTERNAL = '192.168.127.10/24';
  it.each<[string, NetworkView, string, string[], NetworkDecision | undefined]>([
    ['the node runs the site network', view(), 'noop', [], undefined],
    ['the backend cannot apply it', view({ unsupported: ['ovs-bridge br1'] }), 'conflict', [], undefined],
    [
      'a difference: the state before it saved',
      view({ current: { interfaces: [eth0(false)] } }),
      'change',
      ['apply nmstate'],
      { leftovers: none, apply: { desired, revert: { interfaces: [eth0(false)] }, checks: checks() } },
    ],
    [
      'a difference, a record of an earlier attempt at it: kept',
      view({ current: { interfaces: [eth0(false)] }, revertFor: hashOf(desired) }),
      'change',
      ['apply nmstate'],
      { leftovers: none, apply: { desired, checks: checks() } },
    ],
    [
      'a difference, a record for another network: saved again',
      view({ current: { interfaces: [eth0(false)] }, revertFor: 'another' }),
      'change',
      ['apply nmstate'],
      { leftovers: none, apply: { desired, revert: { interfaces: [eth0(false)] }, checks: checks() } },
    ],
    [
      'the internal IP on br-ex must stay there, one not there yet need not',
      view({
        current: { interfaces: [eth0(false)] },
        internalIPs: [INTERNAL, 'fd69::10/64'],
        onBrEx: ['10.0.0.5/24', INTERNAL],
      }),
      'change',
      ['apply nmstate'],
      {
        leftovers: none,
        apply: {
          desired,
          revert: { interfaces: [eth0(false)] },
          checks: checks([INTERNAL, 'fd69::10/64'], [INTERNAL]),
        },
      },
    ],
    [
      'an empty keyfile, the state holds',
      view({ leftovers: { empty: [KEYFILE], temporary: [] } }),
      'change',
      [`delete ${KEYFILE}`, 'apply nmstate'],
      {
        leftovers: { empty: [KEYFILE], temporary: [] },
        apply: { desired, revert: { interfaces: [eth0(true)] }, checks: checks() },
      },
    ],
    [
      "only NetworkManager's temporary copy: removed, nothing applied",
      view({ leftovers: { empty: [], temporary: [`${KEYFILE}.AbC123`] } }),
      'change',
      [`delete ${KEYFILE}.AbC123`],
      { leftovers: { empty: [], temporary: [`${KEYFILE}.AbC123`] } },
    ],
  ])('%s', (_, v, action, changes, decision) => {
    const plan = networkStep.plan(v, site);
    expect(plan.action).toBe(action);
    expect(plan.action === 'change' ? plan.changes.map((c) => `${c.action} ${c.target}`) : []).toEqual(changes);
    expect(plan.action === 'change' ? plan.decision : undefined).toEqual(decision);
  });
});

describe("the network check's name resolution", () => {
  it.each<[string, string[], string[]]>([
    ['an IPv4 site', ['192.168.127.10/24'], ['ahostsv4']],
    ['an IPv6 site: AAAA only', ['fd00:127::10/64'], ['ahostsv6']],
    ['a dual-stack site, its primary family first', ['fd00:127::10/64', '192.168.127.10/24'], ['ahostsv6', 'ahostsv4']],
    ['no internal IP known', [], ['ahosts']],
  ])('asks for the families the site has: %s', (_, internal, databases) => {
    expect(resolveDatabases(internal)).toEqual(databases);
  });
});
