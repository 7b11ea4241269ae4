/**
 * The image-based install's config media through the built executable: a folder holding
 * cluster-configuration/manifest.json is validated, translated, planned and signed like a native
 * site-config; every broken or refused manifest exits 2 naming the manifest's JSON path, with
 * nothing changed under the root.
 */
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import yaml from 'js-yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { layFactoryNode } from '../fixtures/factory-node.js';
import { REPO, runCli } from '../helpers/cli.js';
import { hostTree } from '../helpers/tree.js';

const MEDIA = path.join(REPO, 'examples/ibi-config-media');
const MANIFEST = 'cluster-configuration/manifest.json';
type Manifest = Record<string, unknown>;

let work: string;
let root: string;
let counter = 0;

/** A copy of the example media, its manifest changed by `change`. */
function media(change: (m: Manifest) => void = () => undefined): string {
  const dir = path.join(work, `media-${++counter}`);
  cpSync(MEDIA, dir, { recursive: true });
  const manifest = JSON.parse(readFileSync(path.join(dir, MANIFEST), 'utf8')) as Manifest;
  change(manifest);
  writeFileSync(path.join(dir, MANIFEST), JSON.stringify(manifest));
  return dir;
}

beforeAll(() => {
  work = mkdtempSync(path.join(tmpdir(), 'ibi-media-'));
  root = path.join(work, 'root');
  layFactoryNode(root);
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe('config media that is valid', () => {
  it('validates as media, reading manifest.json and the mirror set beside it', () => {
    const result = runCli(['validate', MEDIA, '--root', root, '-o', 'json']);
    expect(result.code, result.stderr).toBe(0);
    const out = JSON.parse(result.stdout) as { media: string; site: string; files: { name: string }[] };
    expect(out.media).toBe('ibi');
    expect(out.site).toBe('sno-store43');
    expect(out.files.map((f) => f.name)).toEqual([
      MANIFEST,
      'cluster-configuration/manifests/image-digest-mirror-set.json',
    ]);
  });

  it('is found through manifest.json named directly, too', () => {
    expect(runCli(['validate', path.join(MEDIA, MANIFEST), '--root', root]).code).toBe(0);
  });

  it('--translate prints the native site-config it became, credentials redacted, and that validates', () => {
    const result = runCli(['validate', '--translate', MEDIA, '--root', root]);
    expect(result.code, result.stderr).toBe(0);
    const doc = yaml.load(result.stdout) as { spec: Record<string, unknown> };
    expect(doc).toMatchObject({
      apiVersion: 'sno-relocate/v1',
      metadata: { name: 'sno-store43' },
      spec: { baseDomain: 'store43.example.com', clusterName: 'sno', hostname: 'sno-store43' },
    });
    expect(doc.spec.imageDigestMirrors).toHaveLength(2);
    expect(result.stdout).not.toContain('c3RvcmU0Mzpub3QtYS1yZWFsLXBhc3N3b3Jk');
    // the same document with the real pull secret is a native site-config that validates
    const native = path.join(work, 'native');
    mkdirSync(native);
    const manifest = JSON.parse(readFileSync(path.join(MEDIA, MANIFEST), 'utf8')) as {
      pull_secret: string;
      kubeadmin_password_hash: string;
    };
    // the kubeadmin hash is a credential too: redacted like the pull secret
    expect(result.stdout).not.toContain(manifest.kubeadmin_password_hash);
    doc.spec.pullSecret = JSON.parse(manifest.pull_secret);
    doc.spec.access = { ...(doc.spec.access as object), kubeadminPasswordHash: manifest.kubeadmin_password_hash };
    writeFileSync(path.join(native, 'site-config.yaml'), yaml.dump(doc));
    expect(runCli(['validate', native, '--root', root]).code).toBe(0);
  });

  it('plans like a native site-config', () => {
    const result = runCli(['plan', MEDIA, '--root', root, '--only', 'ssh-keys', '-o', 'json']);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain('support@store43.example.com');
  });

  it("maps the site's services end to end: manifest.json, the native fields, the node steps' plan", () => {
    const manifest = JSON.parse(readFileSync(path.join(MEDIA, MANIFEST), 'utf8')) as Manifest & {
      additionalTrustBundle: { userCaBundle: string };
    };
    const translated = runCli(['validate', '--translate', MEDIA, '--root', root, '-o', 'json']);
    expect(translated.code, translated.stderr).toBe(0);
    const { spec } = JSON.parse(translated.stdout) as { spec: Record<string, unknown> };
    expect(spec).toMatchObject({
      network: { machineNetworks: manifest.machine_networks },
      chronyConfig: manifest.chrony_config,
      proxy: manifest.proxy,
      trustBundle: { caBundle: manifest.additionalTrustBundle.userCaBundle, proxyTrustedCA: true },
      nodeLabels: manifest.node_labels,
      access: { kubeadminPasswordHash: expect.stringMatching(/^<redacted/) },
    });
    expect(translated.stdout).not.toContain(manifest.kubeadmin_password_hash);

    const plan = runCli(['plan', MEDIA, '--root', root, '--only', 'node-ip-hint,ntp', '-o', 'json']);
    expect(plan.code, plan.stderr).toBe(0);
    const steps = (
      JSON.parse(plan.stdout) as {
        steps: { step: string; action: string; changes: { target: string; diff?: string[] }[] }[];
      }
    ).steps;
    expect(steps.map((st) => [st.step, st.action])).toEqual([
      ['node-ip-hint', 'change'],
      ['ntp', 'change'],
    ]);
    expect(steps[0]!.changes[0]!.diff).toContain('+ KUBELET_NODEIP_HINT=10.43.0.0');
    expect(steps[1]!.changes[0]).toMatchObject({ target: '/etc/sno-relocate/chrony.conf' });
    expect(steps[1]!.changes[0]!.diff).toContain('+ server ntp1.store43.example.com iburst');
  });

  it('warns about an unknown key and still validates', () => {
    const result = runCli(['validate', media((m) => (m.future_field = 'x')), '--root', root]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain(`${MANIFEST}: $.future_field: unknown key, ignored`);
  });
});

const BROKEN: { name: string; change: (m: Manifest) => void; names: string }[] = [
  { name: 'api_version 2', change: (m) => (m.api_version = 2), names: `${MANIFEST}: $.api_version` },
  { name: 'api_version missing', change: (m) => delete m.api_version, names: `${MANIFEST}: $.api_version` },
  { name: 'api_version a string', change: (m) => (m.api_version = '1'), names: `${MANIFEST}: $.api_version` },
  { name: 'pull secret missing', change: (m) => delete m.pull_secret, names: `${MANIFEST}: $.pull_secret` },
  { name: 'pull secret not JSON', change: (m) => (m.pull_secret = '{auths'), names: `${MANIFEST}: $.pull_secret` },
  { name: 'base_domain missing', change: (m) => delete m.base_domain, names: `${MANIFEST}: $.base_domain` },
  {
    name: 'base_domain not a DNS name',
    change: (m) => (m.base_domain = 'Store_43'),
    names: `${MANIFEST}: $.base_domain ($.spec.baseDomain)`,
  },
  { name: 'hostname a number', change: (m) => (m.hostname = 7), names: `${MANIFEST}: $.hostname` },
  { name: 'node_labels a list', change: (m) => (m.node_labels = ['a']), names: `${MANIFEST}: $.node_labels` },
  { name: 'proxy a string', change: (m) => (m.proxy = 'http://p'), names: `${MANIFEST}: $.proxy` },
  {
    name: 'proxy URL without a scheme',
    change: (m) => (m.proxy = { httpProxy: 'proxy.store43.example.com:3128' }),
    names: `${MANIFEST}: $.proxy ($.spec.proxy.httpProxy)`,
  },
  {
    name: 'machine network holding no site address',
    change: (m) => (m.machine_networks = ['10.99.0.0/24']),
    names: `${MANIFEST}: $.machine_networks ($.spec.network.machineNetworks[0])`,
  },
  {
    name: 'trust bundle for the proxy, with another bundle',
    change: (m) => ((m.additionalTrustBundle as Manifest).proxyConfigmapBundle = 'x'),
    names: `${MANIFEST}: $.additionalTrustBundle.proxyConfigmapBundle`,
  },
  {
    name: 'trust bundle not PEM',
    change: (m) => (m.additionalTrustBundle = { userCaBundle: 'not a certificate' }),
    names: `${MANIFEST}: $.additionalTrustBundle ($.spec.trustBundle.caBundle)`,
  },
  {
    name: 'a label kubelet sets',
    change: (m) => (m.node_labels = { 'kubernetes.io/hostname': 'x' }),
    names: `${MANIFEST}: $.node_labels ($.spec.nodeLabels["kubernetes.io/hostname"])`,
  },
  {
    name: 'kubeadmin hash not bcrypt',
    change: (m) => (m.kubeadmin_password_hash = 'plain'),
    names: `${MANIFEST}: $.kubeadmin_password_hash ($.spec.access.kubeadminPasswordHash)`,
  },
  {
    name: 'nmstate YAML broken',
    change: (m) => (m.raw_nm_state_config = 'interfaces: [\n'),
    names: `${MANIFEST}: $.raw_nm_state_config`,
  },
  {
    name: 'nmstate address not an IP',
    change: (m) => (m.raw_nm_state_config = String(m.raw_nm_state_config).replace('10.43.0.20', '10.43.0.300')),
    names: `${MANIFEST}: $.raw_nm_state_config ($.spec.network.nmstate.interfaces[0].ipv4.address[0].ip)`,
  },
  {
    name: 'load-balancer signer key that is no key',
    change: (m) =>
      (m.KubeconfigCryptoRetention = {
        KubeAPICrypto: { ServingCrypto: { loadbalancer_external_signer_private_key: 'k' }, ClientAuthCrypto: {} },
        IngresssCrypto: {},
      }),
    names: `${MANIFEST}: $.KubeconfigCryptoRetention.KubeAPICrypto.ServingCrypto.loadbalancer_external_signer_private_key: not a PEM private key`,
  },
  {
    name: 'ingress CA key that is no key',
    change: (m) => (m.KubeconfigCryptoRetention = { IngresssCrypto: { ingress_ca: 'k', ingress_certificate_cn: 'x' } }),
    names: `${MANIFEST}: $.KubeconfigCryptoRetention.IngresssCrypto.ingress_ca: not a PEM private key`,
  },
  {
    name: 'admin client CA that is no certificate',
    change: (m) =>
      (m.KubeconfigCryptoRetention = { KubeAPICrypto: { ClientAuthCrypto: { admin_ca_certificate: 'not PEM' } } }),
    names: `${MANIFEST}: $.KubeconfigCryptoRetention.KubeAPICrypto.ClientAuthCrypto.admin_ca_certificate`,
  },
  {
    name: 'cluster_id no UUID',
    change: (m) => (m.cluster_id = 'e6a68c95'),
    names: `${MANIFEST}: $.cluster_id: not a UUID`,
  },
  {
    name: 'server_ssh_keys',
    change: (m) => (m.server_ssh_keys = [{ file_name: 'ssh_host_rsa_key', file_content: 'x' }]),
    names: `${MANIFEST}: $.server_ssh_keys: refused`,
  },
];

describe('config media that is broken or refused', () => {
  it.each(BROKEN.map((c) => [c.name, c] as const))('%s: exit 2, names the path, changes nothing', (_name, c) => {
    const dir = media(c.change);
    const before = hostTree(root);
    const result = runCli(['run', dir, '--root', root]);
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toContain(c.names);
    expect(hostTree(root)).toEqual(before);
  });

  it('never quotes manifest.json when it is not JSON', () => {
    const dir = media();
    writeFileSync(path.join(dir, MANIFEST), '{"pull_secret": "{\\"auths\\": hunter2');
    const result = runCli(['validate', dir, '--root', root]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`${MANIFEST}: not valid JSON`);
    expect(result.stderr).not.toContain('hunter2');
  });
});

describe('signed config media', () => {
  let trusted: string;
  beforeAll(() => {
    trusted = path.join(work, 'trusted-root');
    layFactoryNode(trusted);
    expect(runCli(['keygen', '--out', path.join(work, 'factory')]).code).toBe(0);
    mkdirSync(path.join(trusted, 'etc/sno-relocate/trust'), { recursive: true });
    cpSync(path.join(work, 'factory.pub'), path.join(trusted, 'etc/sno-relocate/trust/factory.pub'));
  });

  it('covers manifest.json and the mirror set exactly as a native folder: a change to either is refused', () => {
    const dir = media();
    const signed = runCli(['sign', '--key', path.join(work, 'factory.key'), dir]);
    expect(signed.code, signed.stderr).toBe(0);
    expect(signed.stdout).toContain('signed 2 file(s) of site sno-store43');
    expect(runCli(['validate', dir, '--root', trusted]).code).toBe(0);

    const mirrors = path.join(dir, 'cluster-configuration/manifests/image-digest-mirror-set.json');
    writeFileSync(mirrors, readFileSync(mirrors, 'utf8').replace('store43', 'evil'));
    const refused = runCli(['validate', dir, '--root', trusted]);
    expect(refused.code).toBe(3);
    expect(refused.stderr).toContain('cluster-configuration/manifests/image-digest-mirror-set.json');
  });
});
