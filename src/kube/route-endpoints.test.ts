/**
 * checkEndpoint as the operators' Go clients reach a route: names resolved by a real dnsmasq in
 * both families, a real TLS listener with an openssl-made CA, addresses tried in turn.
 */
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { createServer as createTcpServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDnsmasq, type RunningDnsmasq } from '../../test/helpers/dnsmasq.js';
import { opensslCa, opensslServing } from '../../test/helpers/openssl.js';
import { checkEndpoint, type RouteEndpoint } from './route-endpoints.js';

const APPS = 'apps.sno.store42.example.com';
const HOST = `console-openshift-console.${APPS}`;
const dir = mkdtempSync(path.join(tmpdir(), 'route-endpoints-'));
const ca = opensslCa(dir, 'ingress-ca');
const serving = opensslServing(dir, 'router', ca, `DNS:*.${APPS}`);
const endpoint: RouteEndpoint = { component: 'console', url: `https://${HOST}`, trusted: readFileSync(ca.crt, 'utf8') };
const dnsServers: RunningDnsmasq[] = [];
let router: https.Server;
let port = 0;

/** a dnsmasq answering the apps domain with these addresses only */
async function clusterDns(name: string, addresses: string[]): Promise<string> {
  const d = path.join(dir, name);
  mkdirSync(d);
  writeFileSync(path.join(d, 'site.conf'), addresses.map((a) => `address=/${APPS}/${a}\n`).join(''));
  const dns = await startDnsmasq(d);
  dnsServers.push(dns);
  return dns.server;
}

/** a loopback address on the router's port where nothing listens */
async function deadAddress(): Promise<string> {
  const probe = createTcpServer();
  const address = '127.0.0.2';
  await new Promise<void>((resolve) => probe.listen(port, address, resolve));
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return address;
}

beforeAll(async () => {
  router = https.createServer({ key: readFileSync(serving.key), cert: readFileSync(serving.crt) }, (_req, res) =>
    res.writeHead(200).end('ok'),
  );
  await new Promise<void>((resolve) => router.listen(0, '::1', resolve));
  port = (router.address() as AddressInfo).port;
});
afterAll(async () => {
  await new Promise<void>((resolve) => router.close(() => resolve()));
  for (const dns of dnsServers) await dns.stop();
});

describe('checkEndpoint', () => {
  it('reaches a route whose name has only an AAAA record (an IPv6-only site)', async () => {
    const server = await clusterDns('v6-only', ['::1']);
    expect(await checkEndpoint(endpoint, { nameservers: [server], port })).toBeUndefined();
  });

  it('tries the next address when the first does not connect, as Go dials them in turn', async () => {
    const server = await clusterDns('dual', [await deadAddress(), '::1']);
    expect(await checkEndpoint(endpoint, { nameservers: [server], port })).toBeUndefined();
  });

  it('names both families when the name resolves in neither', async () => {
    const server = await clusterDns('none', []);
    expect(await checkEndpoint(endpoint, { nameservers: [server], port })).toMatch(
      new RegExp(
        `^console: https://${HOST}: ${HOST} does not resolve through the cluster's DNS \\(${server}: A (ENOTFOUND|EREFUSED), AAAA (ENOTFOUND|EREFUSED)\\)$`,
      ),
    );
  });

  it('says every address it could not connect to', async () => {
    const dead = await deadAddress();
    const server = await clusterDns('dead', [dead]);
    expect(await checkEndpoint(endpoint, { nameservers: [server], port })).toBe(
      `console: https://${HOST}: ${dead}:${port}: ECONNREFUSED`,
    );
  });
});
