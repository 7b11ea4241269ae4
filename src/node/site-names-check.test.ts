/**
 * The health step's check of the site's names against real dnsmasq servers (the node's, the
 * site's) and real TLS listeners standing in for the API server and the router.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer as createTcpServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDnsmasq, type RunningDnsmasq } from '../../test/helpers/dnsmasq.js';
import { clusterNames, renderSiteNames } from './dnsmasq.js';
import { checkNodeNames, checkSiteDns, nameservers } from './site-names-check.js';

const names = clusterNames('sno.store42.example.com');
const ADDRESS = '127.0.0.1';
const dir = mkdtempSync(path.join(tmpdir(), 'site-names-check-'));
const servers: (RunningDnsmasq | tls.Server)[] = [];
let node: RunningDnsmasq;
let factoryOnly: RunningDnsmasq;
let siteWithRecords: RunningDnsmasq;
let siteWithout: RunningDnsmasq;
let api = 0;
let router = 0;

function confDir(name: string, content: string): string {
  const d = path.join(dir, name);
  mkdirSync(d);
  writeFileSync(path.join(d, 'names.conf'), content);
  return d;
}

async function tlsListener(host = ADDRESS): Promise<number> {
  execFileSync('openssl', [
    ...['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '1'],
    ...['-subj', '/CN=listener', '-keyout', path.join(dir, 'key.pem'), '-out', path.join(dir, 'cert.pem')],
  ]);
  const server = tls.createServer({
    key: readFileSync(path.join(dir, 'key.pem')),
    cert: readFileSync(path.join(dir, 'cert.pem')),
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return (server.address() as AddressInfo).port;
}

/** a port where nothing listens */
async function closedPort(): Promise<number> {
  const server = createTcpServer();
  await new Promise<void>((resolve) => server.listen(0, ADDRESS, resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

beforeAll(async () => {
  node = await startDnsmasq(confDir('node', renderSiteNames(names, ADDRESS)));
  factoryOnly = await startDnsmasq(confDir('factory', 'address=/api.sno.factory.example.com/127.0.0.1\n'));
  siteWithRecords = await startDnsmasq(
    confDir('site', `address=/api.${names.domain}/10.42.0.20\naddress=/apps.${names.domain}/10.42.0.20\n`),
  );
  siteWithout = await startDnsmasq(confDir('site-without', 'address=/registry.store42.example.com/10.42.0.30\n'));
  servers.push(node, factoryOnly, siteWithRecords, siteWithout);
  api = await tlsListener();
  router = await tlsListener();
});
afterAll(async () => {
  for (const s of servers)
    if ('stop' in s) await s.stop();
    else await new Promise<void>((resolve) => s.close(() => resolve()));
});

describe('checkNodeNames and checkSiteDns', () => {
  it('pass when the node resolves and serves the names and the site DNS has them', async () => {
    expect(
      await checkNodeNames({ names, addresses: [ADDRESS], nodeServers: [node.server], ports: { api, router } }),
    ).toEqual([]);
    expect(await checkSiteDns(names, [siteWithRecords.server])).toBeUndefined();
    expect(await checkSiteDns(names, [])).toBeUndefined();
  });

  it("warn, naming the records to add, when the site's DNS lacks them", async () => {
    expect(await checkSiteDns(names, [siteWithout.server])).toBe(
      `the site's DNS (${siteWithout.server}) does not resolve api.sno.store42.example.com and *.apps.sno.store42.example.com: add A records for api.sno.store42.example.com and *.apps.sno.store42.example.com pointing at the node's site address, or clients at the site cannot reach the cluster`,
    );
  });

  it('block while the node does not resolve the names or nothing answers on them', async () => {
    const closed = await closedPort();
    expect(
      await checkNodeNames({
        names,
        addresses: [ADDRESS],
        nodeServers: [factoryOnly.server],
        ports: { api, router: closed },
        timeoutMs: 1000,
      }),
    ).toEqual([
      'api.sno.store42.example.com: does not resolve to 127.0.0.1 on the node (EREFUSED)',
      'api-int.sno.store42.example.com: does not resolve to 127.0.0.1 on the node (EREFUSED)',
      'console-openshift-console.apps.sno.store42.example.com: does not resolve to 127.0.0.1 on the node (EREFUSED)',
      `console-openshift-console.apps.sno.store42.example.com: nothing answers on 127.0.0.1:${closed} (ECONNREFUSED)`,
    ]);
  });

  it("reads the node's nameservers from resolv.conf", () => {
    expect(
      nameservers('# forcedns\nsearch example.com\nnameserver 192.168.127.10\nnameserver fe80::1%br-ex\n'),
    ).toEqual(['192.168.127.10', 'fe80::1%br-ex']);
    expect(nameservers(undefined)).toEqual([]);
  });
});

describe('checkNodeNames, dual-stack', () => {
  it('resolves A and AAAA and completes a handshake on each internal address, an IPv6 one in brackets', async () => {
    // '::' listens on both families: the API and the router at 127.0.0.1 and at ::1
    const [api6, router6] = [await tlsListener('::'), await tlsListener('::')];
    const both = await startDnsmasq(confDir('node-dual', renderSiteNames(names, ['127.0.0.1', '::1'])));
    const v4only = await startDnsmasq(confDir('node-v4', renderSiteNames(names, '127.0.0.1')));
    servers.push(both, v4only);
    const input = { names, addresses: ['127.0.0.1', '::1'], ports: { api: api6, router: router6 } };
    expect(await checkNodeNames({ ...input, nodeServers: [both.server] })).toEqual([]);
    expect(await checkNodeNames({ ...input, nodeServers: [v4only.server] })).toEqual([
      'api.sno.store42.example.com: does not resolve to ::1 on the node (EREFUSED)',
      'api-int.sno.store42.example.com: does not resolve to ::1 on the node (EREFUSED)',
      'console-openshift-console.apps.sno.store42.example.com: does not resolve to ::1 on the node (EREFUSED)',
    ]);
    const closed = await closedPort();
    const blocked = await checkNodeNames({
      ...input,
      nodeServers: [both.server],
      ports: { api: api6, router: closed },
    });
    expect(blocked).toContain(
      `console-openshift-console.apps.sno.store42.example.com: nothing answers on [::1]:${closed} (ECONNREFUSED)`,
    );
  });
});
