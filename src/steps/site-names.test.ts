/**
 * The site-names step against a real dnsmasq reading the node's /etc/dnsmasq.d, with dnsmasq's
 * restart going through a real dbus-daemon to the test systemd (test/dbus).
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestBus } from '../../test/dbus/bus.js';
import { startDnsmasq } from '../../test/helpers/dnsmasq.js';
import { STATE_DIR, testNode, testSite } from '../../test/node/context.js';
import { FACTORY_DNSMASQ as FACTORY, laySingleNodeDnsmasq } from '../../test/fixtures/factory-node.js';
import { renderKubeletNodeIpDropIn, KUBELET_NODE_IP_DROP_IN } from '../node/internal-ip.js';
import { FACTORY_DNSMASQ_FILE, SITE_DNSMASQ_FILE } from '../node/dnsmasq.js';
import { type SiteNamesView, siteNamesStep } from './site-names.js';
import { wantedNames } from '../node/site-names.js';
import { KEYS_FILE, sshKeysStep } from './ssh-keys.js';
import { planOf, verifyStep } from '../engine/engine.js';

const site = (parts: Parameters<typeof testSite>[0] = {}) =>
  testSite({
    baseDomain: 'store42.example.com',
    network: { internalIP: '192.168.127.10/24' },
    sshAuthorizedKeys: [
      'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIH0dPb1uZ0d2H5oF4Jt2p0Q9m0cY3o3c8o7y9dJm3G8x site@store42',
    ],
    ...parts,
  });

let bus: Awaited<ReturnType<typeof startTestBus>>;
beforeAll(async () => {
  bus = await startTestBus();
  process.env.DBUS_SYSTEM_BUS_ADDRESS = bus.address;
});
afterAll(() => bus?.stop());

function dnsmasqNode(options: Parameters<typeof testNode>[0] = {}) {
  const node = testNode({ site: site(), systemd: true, ...options });
  const put = (file: string, content: string) => {
    mkdirSync(path.dirname(path.join(node.root, file)), { recursive: true });
    writeFileSync(path.join(node.root, file), content);
  };
  laySingleNodeDnsmasq(node.root);
  return { node, put, read: (file: string) => readFileSync(path.join(node.root, file), 'utf8') };
}

const restarts = async () => (await bus.services.calls()).filter((c) => c.member === 'RestartUnit');

describe('site-names', () => {
  it("adds the site's names beside the factory's, restarts dnsmasq once, and dnsmasq answers both", async () => {
    const { node, read } = dnsmasqNode();
    await bus.services.configure({ root: node.root });
    const state = await node.run([siteNamesStep]);
    expect(state.steps['site-names']?.status).toBe('done');
    expect(read(FACTORY_DNSMASQ_FILE)).toBe(FACTORY);
    expect(await restarts()).toEqual([{ member: 'RestartUnit', args: ['dnsmasq.service', 'replace'] }]);

    const dnsmasq = await startDnsmasq(path.join(node.root, 'etc/dnsmasq.d'));
    try {
      for (const name of [
        'api.sno.store42.example.com',
        'api-int.sno.store42.example.com',
        'oauth-openshift.apps.sno.store42.example.com',
        'console-openshift-console.apps.sno.store42.example.com',
        // the factory's names, which the on-node kubeconfigs use
        'api-int.sno.factory.example.com',
        'api.sno.factory.example.com',
      ])
        expect([name, await dnsmasq.resolve4(name)]).toEqual([name, ['192.168.127.10']]);
      expect(await dnsmasq.resolve4('registry.store42.example.com')).not.toEqual(['192.168.127.10']);
    } finally {
      await dnsmasq.stop();
    }

    // a second run: nothing to do, and dnsmasq is left alone
    expect(await planOf(siteNamesStep, node.ctx)).toEqual({
      action: 'noop',
      reason:
        'dnsmasq resolves api.sno.store42.example.com, api-int.sno.store42.example.com and *.apps.sno.store42.example.com to 192.168.127.10',
    });
    await bus.services.configure({
      root: node.root,
      units: { 'dnsmasq.service': { activeState: 'active', subState: 'running' } },
    });
    await node.run([siteNamesStep]);
    await verifyStep(siteNamesStep, node.ctx);
    expect(await restarts()).toEqual([]);
    node.close();
  });

  it('restarts dnsmasq on the next run when a run was cut off between the file and the restart', async () => {
    const { node, put, read } = dnsmasqNode();
    await bus.services.configure({ root: node.root });
    await node.run([siteNamesStep]);
    const written = read(SITE_DNSMASQ_FILE);
    // the state a power cut leaves after the write: the marker, the file, no restart, no record
    put(path.join(STATE_DIR, 'dnsmasq-restart-pending'), `${SITE_DNSMASQ_FILE}\n`);
    await expect(verifyStep(siteNamesStep, node.ctx)).rejects.toThrow(
      'site-names: still differs after apply: start dnsmasq.service (restart: a previous run changed its files but did not restart it)',
    );
    expect(await planOf(siteNamesStep, node.ctx)).toMatchObject({
      action: 'change',
      changes: [
        {
          action: 'start',
          target: 'dnsmasq.service',
          summary: 'restart: a previous run changed its files but did not restart it',
        },
      ],
    });
    await bus.services.configure({ root: node.root });
    await node.run([siteNamesStep]);
    expect(await restarts()).toHaveLength(1);
    expect(read(SITE_DNSMASQ_FILE)).toBe(written);
    await verifyStep(siteNamesStep, node.ctx);
    node.close();
  });

  it('puts the previous file back when dnsmasq does not restart with the new one', async () => {
    const { node, put, read } = dnsmasqNode();
    const before = '# names of an earlier site\naddress=/api.sno.old.example.com/192.168.127.10\n';
    put(SITE_DNSMASQ_FILE, before);
    await bus.services.configure({ root: node.root, units: { 'dnsmasq.service': { startResult: 'failed' } } });
    await expect(node.run([siteNamesStep])).rejects.toThrow(
      `site-names: dnsmasq.service did not restart with ${SITE_DNSMASQ_FILE} (failed); the previous file is back, but dnsmasq did not restart with it either (failed)`,
    );
    expect(read(SITE_DNSMASQ_FILE)).toBe(before);
    expect(read(FACTORY_DNSMASQ_FILE)).toBe(FACTORY);
    // dnsmasq restarts again with what it ran before; the marker keeps the next run's restart
    expect(await restarts()).toHaveLength(2);
    expect(existsSync(path.join(node.root, STATE_DIR, 'dnsmasq-restart-pending'))).toBe(true);
    node.close();
  });

  it('refuses a cluster name other than the one dnsmasq serves, before the first node step changes anything', async () => {
    const { node } = dnsmasqNode({ site: site({ clusterName: 'other' }) });
    await bus.services.configure({ root: node.root });
    await expect(node.run([sshKeysStep, siteNamesStep])).rejects.toMatchObject({ exitCode: 3 });
    expect(existsSync(path.join(node.root, KEYS_FILE))).toBe(false);
    expect(existsSync(path.join(node.root, SITE_DNSMASQ_FILE))).toBe(false);
    expect(await restarts()).toEqual([]);
    expect(await planOf(siteNamesStep, node.ctx)).toEqual({
      action: 'conflict',
      reason: `spec.clusterName is other, but ${FACTORY_DNSMASQ_FILE} names the cluster sno: renaming the cluster is not supported`,
    });
  });

  it("takes the kubelet drop-in's internal IP when the site-config sets none", async () => {
    const { node, put } = dnsmasqNode({ site: site({ network: {} }) });
    put(KUBELET_NODE_IP_DROP_IN, renderKubeletNodeIpDropIn('192.168.127.20/24'));
    expect(await planOf(siteNamesStep, node.ctx)).toMatchObject({
      action: 'change',
      summary:
        'resolve api.sno.store42.example.com, api-int.sno.store42.example.com and *.apps.sno.store42.example.com to 192.168.127.20 on the node',
    });
  });

  it("leaves dnsmasq alone where the factory's names are the site's, and on nodes without the configuration", async () => {
    const same = dnsmasqNode({ site: site({ baseDomain: 'factory.example.com' }) }).node;
    expect(await planOf(siteNamesStep, same.ctx)).toMatchObject({ action: 'noop' });
    expect(await planOf(siteNamesStep, testNode({ site: site() }).ctx)).toEqual({
      action: 'noop',
      reason: `no ${FACTORY_DNSMASQ_FILE}: the node has no single-node dnsmasq configuration`,
    });
  });

  it('removes its file when a later site uses the factory domain again', async () => {
    const { node, put } = dnsmasqNode({ site: site({ baseDomain: 'factory.example.com' }) });
    put(SITE_DNSMASQ_FILE, '# names of an earlier site\n');
    await bus.services.configure({ root: node.root });
    await node.run([siteNamesStep]);
    expect(existsSync(path.join(node.root, SITE_DNSMASQ_FILE))).toBe(false);
    expect(await restarts()).toHaveLength(1);
    node.close();
  });
});

describe('site-names, dual-stack, against dnsmasq', () => {
  it.each([
    ['IPv6 primary', { internalIP: 'fd69::10/64', secondaryInternalIP: '192.168.127.10/24' }],
    ['IPv4 primary', { internalIP: '192.168.127.10/24', secondaryInternalIP: 'fd69::10/64' }],
  ])('%s: dnsmasq answers A with the IPv4 internal IP and AAAA with the IPv6 one', async (_, network) => {
    const { node } = dnsmasqNode({ site: site({ network }) });
    await bus.services.configure({ root: node.root });
    await node.run([siteNamesStep]);
    const dnsmasq = await startDnsmasq(path.join(node.root, 'etc/dnsmasq.d'));
    try {
      for (const name of [
        'api.sno.store42.example.com',
        'api-int.sno.store42.example.com',
        'console-openshift-console.apps.sno.store42.example.com',
      ]) {
        expect([name, await dnsmasq.resolve4(name)]).toEqual([name, ['192.168.127.10']]);
        expect([name, await dnsmasq.resolve6(name)]).toEqual([name, ['fd69::10']]);
      }
    } finally {
      await dnsmasq.stop();
    }
    expect(await planOf(siteNamesStep, node.ctx)).toMatchObject({ action: 'noop' });
    node.close();
  });
});

describe('site-names decisions', () => {
  const factory = { domain: 'sno.factory.example.com', address: '192.168.127.10' };
  const site = testSite({ baseDomain: 'store42.example.com', network: { internalIP: '192.168.127.10/24' } });
  const file = wantedNames({ factory, pinned: [] }, site);
  const written = file.kind === 'names' ? file.file!.content : '';
  const names = (to: string) =>
    `api.sno.store42.example.com, api-int.sno.store42.example.com and *.apps.sno.store42.example.com to ${to}`;
  const restartWith = (to: string, content?: string) => ({
    files: content === undefined ? [] : [{ path: SITE_DNSMASQ_FILE, content, mode: 0o644, uid: 0, gid: 0 }],
    resolves: names(to),
  });
  it.each([
    ['no single-node dnsmasq', { factory: 'absent' }, site, 'noop', [], undefined],
    ['a factory file without an api host', { factory: undefined }, site, 'noop', [], undefined],
    ['another cluster name', { factory }, { ...site, clusterName: 'other' }, 'conflict', [], undefined],
    ['no internal IP anywhere', { factory }, testSite({ baseDomain: 'store42.example.com' }), 'noop', [], undefined],
    ['nothing written yet', { factory }, site, 'change', ['create', 'start'], restartWith('192.168.127.10', written)],
    ['written and restarted', { factory, siteFile: { content: written, mode: 0o644 } }, site, 'noop', [], undefined],
    [
      'written, restart owed',
      { factory, siteFile: { content: written, mode: 0o644 }, restartPending: true },
      site,
      'change',
      ['start'],
      restartWith('192.168.127.10', written),
    ],
    [
      'the factory already names the site, an old file of the agent',
      {
        factory: { domain: 'sno.store42.example.com', address: '192.168.127.10' },
        siteFile: { content: 'x', mode: 0o644 },
      },
      site,
      'change',
      ['delete', 'start'],
      restartWith('192.168.127.10'),
    ],
    [
      'the pinned address stands in for the internal IP',
      { factory, pinned: ['192.168.127.10'], siteFile: { content: written, mode: 0o644 } },
      testSite({ baseDomain: 'store42.example.com' }),
      'noop',
      [],
      undefined,
    ],
    [
      'dual-stack: the factory file names the site, still one line per family to write',
      { factory: { domain: 'sno.store42.example.com', address: '192.168.127.10' } },
      testSite({
        baseDomain: 'store42.example.com',
        network: { internalIP: '192.168.127.10/24', secondaryInternalIP: 'fd69::10/64' },
      }),
      'change',
      ['create', 'start'],
      restartWith(
        '192.168.127.10 and fd69::10',
        expect.stringContaining('address=/api.sno.store42.example.com/fd69::10'),
      ),
    ],
  ] as const)('%s', (_, view, s, action, changes, decision) => {
    const plan = siteNamesStep.plan({ restartPending: false, pinned: [], ...view } as SiteNamesView, s);
    expect(plan.action).toBe(action);
    expect(plan.action === 'change' ? plan.changes.map((c) => c.action) : []).toEqual(changes);
    expect(plan.action === 'change' ? plan.decision : undefined).toEqual(decision);
  });
});

describe('site-names, dual-stack', () => {
  const factory = { domain: 'sno.factory.example.com', address: '192.168.127.10' };
  it.each([
    [
      'IPv4 primary',
      { internalIP: '192.168.127.10/24', secondaryInternalIP: 'fd69::10/64' },
      ['192.168.127.10', 'fd69::10'],
    ],
    [
      'IPv6 primary',
      { internalIP: 'fd69::10/64', secondaryInternalIP: '192.168.127.10/24' },
      ['fd69::10', '192.168.127.10'],
    ],
    ['IPv6 only', { internalIP: 'FD69:0::10/64' }, ['fd69::10']],
  ])('%s: each name has a line per family', (_, network, addresses) => {
    const want = wantedNames({ factory, pinned: [] }, testSite({ baseDomain: 'store42.example.com', network }));
    expect(want.kind === 'names' && want.addresses).toEqual(addresses);
    const lines = (want.kind === 'names' ? want.file!.content : '').split('\n').filter((l) => l.startsWith('address='));
    expect(lines).toEqual(
      ['apps', 'api-int', 'api'].flatMap((n) => addresses.map((a) => `address=/${n}.sno.store42.example.com/${a}`)),
    );
  });

  it("takes the node's pinned addresses, primary first, when the site-config names none", () => {
    const want = wantedNames(
      { factory, pinned: ['fd69::10', '192.168.127.10'] },
      testSite({ baseDomain: 'x.example.com' }),
    );
    expect(want.kind === 'names' && want.summary).toBe(
      'api.sno.x.example.com, api-int.sno.x.example.com and *.apps.sno.x.example.com to fd69::10 and 192.168.127.10',
    );
  });
});
