/**
 * The health step's check of the site's names against real dnsmasq servers (the node's, the
 * site's) and real TLS listeners standing in for the API server and the router.
 */
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer as createTcpServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDnsmasq, type RunningDnsmasq } from '../../test/helpers/dnsmasq.js';
import { opensslCa, opensslServing } from '../../test/helpers/openssl.js';
import { clusterNames, renderSiteNames } from './dnsmasq.js';
import { checkNodeNames, checkServedNames, checkSiteDns, nameservers } from './site-names-check.js';

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

const siteCa = opensslCa(dir, 'site-ca');
const trust = readFileSync(siteCa.crt, 'utf8');
const SITE_SAN = `DNS:${names.api},DNS:*.${names.apps}`;

/** A TLS listener serving a certificate `ca` signed for `san`, as the API server or the router would. */
async function tlsListener(host = ADDRESS, ca = siteCa, san = SITE_SAN): Promise<number> {
  const pair = opensslServing(dir, `listener-${servers.length}`, ca, san);
  const server = tls.createServer({ key: readFileSync(pair.key), cert: readFileSync(pair.crt) });
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
      await checkNodeNames({ names, addresses: [ADDRESS], nodeServers: [node.server], ports: { api, router }, trust }),
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
        trust,
      }),
    ).toEqual([
      'api.sno.store42.example.com: does not resolve to 127.0.0.1 on the node (EREFUSED)',
      'api-int.sno.store42.example.com: does not resolve to 127.0.0.1 on the node (EREFUSED)',
      'console-openshift-console.apps.sno.store42.example.com: does not resolve to 127.0.0.1 on the node (EREFUSED)',
      `console-openshift-console.apps.sno.store42.example.com at 127.0.0.1:${closed}: nothing answers (ECONNREFUSED)`,
      `oauth-openshift.apps.sno.store42.example.com at 127.0.0.1:${closed}: nothing answers (ECONNREFUSED)`,
    ]);
  });

  it("reads the node's nameservers from resolv.conf", () => {
    expect(
      nameservers('# forcedns\nsearch example.com\nnameserver 192.168.127.10\nnameserver fe80::1%br-ex\n'),
    ).toEqual(['192.168.127.10', 'fe80::1%br-ex']);
    expect(nameservers(undefined)).toEqual([]);
  });
});

describe('the certificates served through the names', () => {
  it('block, naming the endpoint and the certificate, when the router serves one of another CA or for other names', async () => {
    const stranger = opensslCa(dir, 'stranger-ca');
    const foreign = await tlsListener(ADDRESS, stranger);
    const factory = await tlsListener(ADDRESS, siteCa, 'DNS:*.apps.sno.factory.example.com');
    const check = (port: number) =>
      checkNodeNames({ names, addresses: [ADDRESS], nodeServers: [node.server], ports: { api, router: port }, trust });
    const console = `console-openshift-console.apps.sno.store42.example.com at 127.0.0.1`;
    expect(await check(foreign)).toEqual([
      expect.stringMatching(
        new RegExp(
          `^${console}:${foreign} served CN=listener-\\d+ \\(issued by CN=stranger-ca, serial [0-9A-F]+, valid until .+\\), which does not verify with the site's CAs: its issuer CN=stranger-ca is not among the site's CAs, nor served after it$`,
        ),
      ),
      expect.stringContaining(
        `oauth-openshift.apps.sno.store42.example.com at 127.0.0.1:${foreign} served CN=listener-`,
      ),
    ]);
    expect((await check(factory))[0]).toMatch(
      new RegExp(
        `^${console}:${factory} served CN=listener-\\d+ \\(issued by CN=site-ca, .+\\), which is not for console-openshift-console.apps.sno.store42.example.com: it names DNS:\\*.apps.sno.factory.example.com$`,
      ),
    );
  });

  it('are probed where the node resolves the names when it has no single-node dnsmasq configuration', async () => {
    const foreign = await tlsListener(ADDRESS, opensslCa(dir, 'other-ca'));
    expect(await checkServedNames(names, [node.server], trust, { ports: { api, router } })).toEqual([]);
    expect(await checkServedNames(names, [node.server], trust, { ports: { api, router: foreign } })).toEqual([
      expect.stringContaining(`console-openshift-console.apps.sno.store42.example.com at 127.0.0.1:${foreign} served`),
      expect.stringContaining(`oauth-openshift.apps.sno.store42.example.com at 127.0.0.1:${foreign} served`),
    ]);
    // a name the node does not resolve is the site DNS check's to name, not probed
    expect(await checkServedNames(names, [factoryOnly.server], trust, { timeoutMs: 1000 })).toEqual([]);
  });
});

describe('checkNodeNames, dual-stack', () => {
  it('resolves A and AAAA and completes a handshake on each internal address, an IPv6 one in brackets', async () => {
    // '::' listens on both families: the API and the router at 127.0.0.1 and at ::1
    const [api6, router6] = [await tlsListener('::'), await tlsListener('::')];
    const both = await startDnsmasq(confDir('node-dual', renderSiteNames(names, ['127.0.0.1', '::1'])));
    const v4only = await startDnsmasq(confDir('node-v4', renderSiteNames(names, '127.0.0.1')));
    servers.push(both, v4only);
    const input = { names, addresses: ['127.0.0.1', '::1'], ports: { api: api6, router: router6 }, trust };
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
      `console-openshift-console.apps.sno.store42.example.com at [::1]:${closed}: nothing answers (ECONNREFUSED)`,
    );
  });
});
