/**
 * Media as the image-based installer writes it (installer-media.ts) is taken whole: every field is
 * taken, checked or accepted as unused; the installer's admin kubeconfig chains to the signers in
 * the media (openssl verifies it, as a site's tools would); and no key of the media reaches what
 * the agent prints of a medium.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import yaml from 'js-yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSiteConfig } from '../../src/config/load.js';
import { runAgent } from '../node/cli.js';
import { type InstallerOutput, writeInstallerMedia } from './installer-media.js';

const STORE = {
  clusterName: 'sno',
  baseDomain: 'store44.example.com',
  hostname: 'sno-store44',
  pullSecret: { auths: { 'registry.store44.example.com:5000': { auth: Buffer.from('s44:token').toString('base64') } } },
  sshKey: 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIH0dPb1uZ0d2H5oF4Jt2p0Q9m0cY3o3c8o7y9dJm3G8x ops@store44.example.com',
  machineNetwork: '10.44.0.0/24',
  releaseRegistry: 'quay.io',
  additionalNTPSources: ['ntp.store44.example.com'],
  imageDigestSources: [
    { source: 'quay.io/openshift-release-dev/ocp-release', mirrors: ['registry.store44.example.com:5000/ocp/release'] },
  ],
  kubeadminPasswordHash: '$2a$10$N9qo8uLOickgx2ZMRZoMyeIjZAgcfl7p92ldGxad68LJZdL17lhWy',
};

let work: string;
let media: InstallerOutput;
beforeAll(() => {
  work = mkdtempSync(path.join(tmpdir(), 'ibi-installer-'));
  media = writeInstallerMedia(work, STORE);
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

const KEYS = () =>
  Object.values(media.signers).map((s) =>
    s.keyPem
      .split('\n')
      .filter((l) => l && !l.startsWith('-----'))
      .join(''),
  );

describe("the installer's media", () => {
  it('loads with nothing refused: identity and signers taken, the re-signing keys unused', async () => {
    const loaded = await loadSiteConfig(media.mediaDir, new Date());
    expect(loaded.media).toBe('ibi');
    expect(loaded.findings.filter((f) => f.severity === 'error')).toEqual([]);
    const { imageBased, access, chronyConfig, imageDigestMirrors } = loaded.site;
    expect(imageBased).toMatchObject({
      clusterID: media.clusterId,
      infraID: media.infraId,
      releaseRegistry: 'quay.io',
      apiSigner: { subject: { commonName: 'kube-apiserver-lb-signer', organizationalUnit: 'openshift' } },
      ingressSigner: { subject: { commonName: expect.stringMatching(/^ingress-operator@\d+$/) } },
    });
    expect(imageBased!.unused.map((u) => u.field.split('.').pop())).toEqual([
      'localhost_signer_private_key',
      'service_network_signer_private_key',
    ]);
    expect(access?.clientCaPem).toBe(media.signers.adminKubeconfig.certPem);
    expect(chronyConfig).toContain('server ntp.store44.example.com iburst');
    expect(imageDigestMirrors).toEqual(STORE.imageDigestSources);
  });

  it("writes an admin kubeconfig whose client certificate chains to the media's admin CA, and a CA bundle holding the LB signer", () => {
    const kubeconfig = yaml.load(readFileSync(media.kubeconfigPath, 'utf8')) as {
      clusters: { cluster: { server: string; 'certificate-authority-data': string } }[];
      users: { user: { 'client-certificate-data': string } }[];
    };
    expect(kubeconfig.clusters[0]!.cluster.server).toBe('https://api.sno.store44.example.com:6443');
    const ca = path.join(work, 'admin-ca.crt');
    const client = path.join(work, 'client.crt');
    writeFileSync(
      ca,
      String(
        (
          media.manifest.KubeconfigCryptoRetention as {
            KubeAPICrypto: { ClientAuthCrypto: { admin_ca_certificate: string } };
          }
        ).KubeAPICrypto.ClientAuthCrypto.admin_ca_certificate,
      ),
    );
    writeFileSync(client, Buffer.from(kubeconfig.users[0]!.user['client-certificate-data'], 'base64'));
    expect(
      execFileSync('openssl', ['verify', '-purpose', 'sslclient', '-CAfile', ca, client], { encoding: 'utf8' }),
    ).toContain(': OK');
    const bundle = Buffer.from(kubeconfig.clusters[0]!.cluster['certificate-authority-data'], 'base64').toString();
    expect(bundle).toContain(media.signers.lb.certPem.trim());
    expect(bundle).toContain(media.signers.ingress.certPem.trim());
  });

  it('never prints a key of the media: validate --translate, and every finding', async () => {
    const loaded = await loadSiteConfig(media.mediaDir, new Date());
    const shown = JSON.stringify({ document: loaded.document, findings: loaded.findings });
    for (const key of KEYS()) expect(shown).not.toContain(key.slice(0, 40));
  });

  it('validate --translate names every field of the media and what it became, identity, admin CA and signers too', () => {
    const out = runAgent(['validate', '--translate', media.mediaDir, '--root', work, '-o', 'json'], {});
    expect(out.code, out.stderr).toBe(0);
    const { translation } = JSON.parse(out.stdout) as {
      translation: { field: string; use: string; became?: string; value?: string }[];
    };
    // every top-level field of manifest.json the installer wrote non-empty, and every key of its crypto
    const crypto = 'KubeconfigCryptoRetention';
    const given = Object.entries(media.manifest)
      .filter(
        ([k, v]) =>
          k !== crypto &&
          v !== '' &&
          JSON.stringify(v) !== JSON.stringify({ userCaBundle: '', proxyConfigmapName: '', proxyConfigmapBundle: '' }),
      )
      .map(([k]) => k);
    const leaves = (o: object, at: string): string[] =>
      Object.entries(o).flatMap(([k, v]) =>
        typeof v === 'object' ? leaves(v as object, `${at}.${k}`) : [`${at}.${k}`],
      );
    const fields = translation.map((t) => t.field);
    expect(fields.sort()).toEqual([...given, ...leaves(media.manifest[crypto] as object, crypto)].sort());
    const fate = (field: string) => translation.find((t) => t.field.endsWith(field));
    expect(fate('cluster_id')).toMatchObject({ use: 'taken', value: media.clusterId });
    expect(fate('infra_id')).toMatchObject({ use: 'checked', value: media.infraId });
    expect(fate('release_registry')).toMatchObject({ use: 'checked', value: 'quay.io' });
    expect(fate('admin_ca_certificate')?.value).toContain('OU=openshift, CN=admin-kubeconfig-signer');
    expect(fate('admin_ca_certificate')?.value).toContain('factoryAdminKubeconfig: revoke');
    expect(fate('loadbalancer_external_signer_private_key')?.value).toBe(
      'the private key of OU=openshift, CN=kube-apiserver-lb-signer (not shown)',
    );
    expect(fate('localhost_signer_private_key')?.use).toBe('unused');
    expect(fate('hostname')).toMatchObject({ use: 'taken', became: 'spec.hostname' });
    for (const key of KEYS()) expect(out.stdout).not.toContain(key.slice(0, 40));
  });
});
