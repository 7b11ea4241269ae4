import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { bootstrapperClientSpec } from '../../test/kube/csr-requests.js';
import { judgeCsr, KUBELET_SERVING_SIGNER, NODE_BOOTSTRAPPER, parseCertificateRequest, type CsrObject } from './csr.js';

const dir = mkdtempSync(path.join(tmpdir(), 'csr-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A request made by the real openssl, with the key type kubelet uses (EC P-256) unless told. */
function openssl(subject: string, sans?: string, key = 'ec'): string {
  const out = path.join(dir, `${Math.random().toString(36).slice(2)}.csr`);
  const keyArgs = key === 'ec' ? ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256'] : ['-newkey', 'rsa:2048'];
  execFileSync(
    'openssl',
    [
      'req',
      '-new',
      ...keyArgs,
      '-nodes',
      '-keyout',
      `${out}.key`,
      '-subj',
      subject,
      ...(sans ? ['-addext', `subjectAltName=${sans}`] : []),
      '-out',
      out,
    ],
    { stdio: 'pipe' },
  );
  return readFileSync(out, 'utf8');
}

const node = { hostname: 'sno-store42', ips: ['192.168.127.10', '10.42.0.5', 'fd00::5'] };
const csr = (pem: string, over: Partial<CsrObject['spec']> = {}): CsrObject => ({
  metadata: { name: 'csr-x' },
  spec: {
    ...bootstrapperClientSpec(Buffer.from(pem).toString('base64')),
    ...over,
  },
});
const serving = (pem: string, over: Partial<CsrObject['spec']> = {}) =>
  csr(pem, {
    signerName: KUBELET_SERVING_SIGNER,
    usages: ['digital signature', 'server auth'],
    username: 'system:node:sno-store42',
    groups: ['system:nodes', 'system:authenticated'],
    ...over,
  });

describe('parseCertificateRequest', () => {
  it('reads subject and names of EC and RSA requests and checks their signature', () => {
    for (const key of ['ec', 'rsa']) {
      const parsed = parseCertificateRequest(
        openssl('/O=system:nodes/CN=system:node:a', 'DNS:a,IP:10.0.0.1,IP:fd00::1,email:x@y.z', key),
      );
      expect(parsed).toEqual({
        subject: [
          ['O', 'system:nodes'],
          ['CN', 'system:node:a'],
        ],
        dnsNames: ['a'],
        ipAddresses: ['10.0.0.1', 'fd00::1'],
        emailAddresses: ['x@y.z'],
        uris: [],
        signatureValid: true,
      });
    }
  });

  it('finds a tampered request', () => {
    const pem = openssl('/O=system:nodes/CN=system:node:a');
    const der = Buffer.from(pem.replace(/-----[^-]+-----/g, '').replace(/\s/g, ''), 'base64');
    // the last byte belongs to the signature
    der[der.length - 1] = der[der.length - 1]! ^ 0xff;
    const tampered = `-----BEGIN CERTIFICATE REQUEST-----\n${der.toString('base64')}\n-----END CERTIFICATE REQUEST-----\n`;
    expect(parseCertificateRequest(tampered).signatureValid).toBe(false);
  });

  it('refuses what is not a request', () => {
    expect(() => parseCertificateRequest('hello')).toThrow(/not a PEM certificate request/);
  });
});

describe('judgeCsr', () => {
  const clientPem = openssl('/O=system:nodes/CN=system:node:sno-store42');
  const servingPem = openssl(
    '/O=system:nodes/CN=system:node:sno-store42',
    'DNS:sno-store42,IP:192.168.127.10,IP:fd00:0::5',
  );

  it('approves this node client request from the bootstrapper or the node, with or without key encipherment', () => {
    expect(judgeCsr(csr(clientPem), node)).toMatchObject({ approve: true, kind: 'client' });
    expect(
      judgeCsr(csr(clientPem, { usages: ['digital signature', 'key encipherment', 'client auth'] }), node).approve,
    ).toBe(true);
    expect(
      judgeCsr(csr(clientPem, { username: 'system:node:sno-store42', groups: ['system:nodes'] }), node),
    ).toMatchObject({ approve: true, why: expect.stringMatching(/the node itself/) });
  });

  it('after a rename, approves the new name client request filed by the node under its former name only', () => {
    const former = { username: 'system:node:sno-factory', groups: ['system:nodes'] };
    expect(judgeCsr(csr(clientPem, former), { ...node, former: 'sno-factory' })).toMatchObject({
      approve: true,
      why: expect.stringMatching(/the node under its former name sno-factory/),
    });
    expect(judgeCsr(csr(clientPem, former), node)).toMatchObject({
      approve: false,
      why: expect.stringMatching(/neither/),
    });
    expect(
      judgeCsr(serving(servingPem, { username: 'system:node:sno-factory' }), { ...node, former: 'sno-factory' }),
    ).toMatchObject({ approve: false, why: expect.stringMatching(/not by the node itself/) });
  });

  it('approves this node serving request naming only its own names and addresses', () => {
    expect(judgeCsr(serving(servingPem), node)).toMatchObject({
      approve: true,
      kind: 'serving',
      why: expect.stringMatching(/sno-store42, 192.168.127.10, fd00::5/),
    });
  });

  it.each([
    ['another node', () => csr(openssl('/O=system:nodes/CN=system:node:intruder')), /for node intruder, not this node/],
    [
      'a wrong organization',
      () => csr(openssl('/O=system:masters/CN=system:node:sno-store42')),
      /is not CN=system:node/,
    ],
    [
      'an extra subject attribute',
      () => csr(openssl('/O=system:nodes/OU=x/CN=system:node:sno-store42')),
      /is not CN=system:node/,
    ],
    [
      'a user that is not a bootstrapper',
      () => csr(clientPem, { username: 'mallory', groups: ['system:authenticated'] }),
      /requested by mallory/,
    ],
    [
      'the bootstrapper name without its group',
      () => csr(clientPem, { groups: ['system:authenticated'] }),
      /neither the node-bootstrapper/,
    ],
    [
      'server auth on a client request',
      () => csr(clientPem, { usages: ['digital signature', 'server auth'] }),
      /usages/,
    ],
    [
      'a client request with names',
      () => csr(openssl('/O=system:nodes/CN=system:node:sno-store42', 'DNS:sno-store42')),
      /client request with subjectAltNames/,
    ],
    [
      'a serving request from the bootstrapper',
      () => serving(servingPem, { username: NODE_BOOTSTRAPPER }),
      /not by the node itself/,
    ],
    [
      'a serving request from another node',
      () => serving(servingPem, { username: 'system:node:intruder' }),
      /not by the node itself/,
    ],
    [
      'a serving request for a foreign name',
      () => serving(openssl('/O=system:nodes/CN=system:node:sno-store42', 'DNS:sno-store42,DNS:api.example.com')),
      /not this node's: api.example.com/,
    ],
    [
      'a serving request for a foreign address',
      () => serving(openssl('/O=system:nodes/CN=system:node:sno-store42', 'DNS:sno-store42,IP:192.168.127.99')),
      /not this node's: 192.168.127.99/,
    ],
    [
      'a serving request with an e-mail name',
      () => serving(openssl('/O=system:nodes/CN=system:node:sno-store42', 'DNS:sno-store42,email:a@b.c')),
      /e-mail/,
    ],
    [
      'another signer',
      () => csr(clientPem, { signerName: 'kubernetes.io/kube-apiserver-client' }),
      /not a kubelet signer/,
    ],
    ['garbage', () => csr('garbage'), /cannot be read/],
  ])('leaves alone %s', (_, make, why) => {
    const verdict = judgeCsr(make(), node);
    expect(verdict.approve).toBe(false);
    expect(verdict.why).toMatch(why);
  });
});
