/**
 * examples/ibi-config-media: config media for store 43 as `openshift-install image-based create
 * config-image` writes it, made by the same generator as the tests' media (installer-media.ts), so
 * the example has the installer's shape: its identity (cluster ID, infra ID) and its kubeconfig
 * crypto (the signers' keys, the admin CA) filled in. Regenerate with:
 *   npx tsx -e "import { writeExampleMedia } from './test/ibi/example-media.ts'; writeExampleMedia()"
 * (new keys and IDs each time: the example's values are the installer's random ones).
 */
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { REPO } from '../helpers/cli.js';
import { type InstallerInput, type InstallerOutput, writeInstallerMedia } from './installer-media.js';

export const EXAMPLE_MEDIA = path.join(REPO, 'examples/ibi-config-media');

/** the store's proxy CA (twenty years), which install-config's additionalTrustBundle carries */
const PROXY_CA = [
  '-----BEGIN CERTIFICATE-----',
  'MIIBnDCCAUGgAwIBAgIUBeGN5XbmCZUtOQhhT8eBZ7nVIGEwCgYIKoZIzj0EAwIw',
  'GzEZMBcGA1UEAwwQc3RvcmU0My1wcm94eS1jYTAeFw0yNjExMjQxNDU1MTVaFw00',
  'NjExMTkxNDU1MTVaMBsxGTAXBgNVBAMMEHN0b3JlNDMtcHJveHktY2EwWTATBgcq',
  'hkjOPQIBBggqhkjOPQMBBwNCAATali0b/GwE/R5ZA8nyrtFMwDSLE0dJpifanzw+',
  'bpBIb7HJtqfq/NqjC7LTx443fAfbn/E3dc/BzRz0FLHGjUqdo2MwYTAdBgNVHQ4E',
  'FgQUoGAEyZIaoYhQQ5AuDk0FLE2pM0IwHwYDVR0jBBgwFoAUoGAEyZIaoYhQQ5Au',
  'Dk0FLE2pM0IwDwYDVR0TAQH/BAUwAwEB/zAOBgNVHQ8BAf8EBAMCAQYwCgYIKoZI',
  'zj0EAwIDSQAwRgIhAK/rPnOdmM+aR+eD4niqvaNijJD8MoOYj33hWs2PtlYCAiEA',
  'us7thSEc4wrwkH2TnMXoxElWI4reg0kTKAjCong/b0E=',
  '-----END CERTIFICATE-----',
].join('\n');

/** what the store's install-config.yaml and image-based-config.yaml say */
export const EXAMPLE_STORE: InstallerInput = {
  clusterName: 'sno',
  baseDomain: 'store43.example.com',
  hostname: 'sno-store43',
  pullSecret: {
    auths: {
      'registry.store43.example.com:5000': {
        auth: 'c3RvcmU0Mjpub3QtYS1yZWFsLXBhc3N3b3Jk',
        email: 'ops@store43.example.com',
      },
    },
  },
  sshKey:
    'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIH0dPb1uZ0d2H5oF4Jt2p0Q9m0cY3o3c8o7y9dJm3G8x support@store43.example.com',
  machineNetwork: '10.43.0.0/24',
  networkConfig: {
    interfaces: [
      {
        name: 'br-ex',
        type: 'ovs-interface',
        state: 'up',
        ipv4: { enabled: true, dhcp: false, address: [{ ip: '10.43.0.20', 'prefix-length': 24 }] },
        ipv6: { enabled: false },
      },
    ],
    routes: { config: [{ destination: '0.0.0.0/0', 'next-hop-address': '10.43.0.1', 'next-hop-interface': 'br-ex' }] },
    'dns-resolver': { config: { server: ['10.43.0.53'], search: ['store43.example.com'] } },
  },
  additionalNTPSources: ['ntp1.store43.example.com', 'ntp2.store43.example.com'],
  imageDigestSources: [
    { source: 'quay.io/openshift-release-dev/ocp-release', mirrors: ['registry.store43.example.com:5000/ocp/release'] },
    {
      source: 'quay.io/openshift-release-dev/ocp-v4.0-art-dev',
      mirrors: ['registry.store43.example.com:5000/ocp/release'],
    },
  ],
  kubeadminPasswordHash: '$2a$10$N9qo8uLOickgx2ZMRZoMyeIjZAgcfl7p92ldGxad68LJZdL17lhWy',
  proxy: {
    httpProxy: 'http://proxy.store43.example.com:3128',
    httpsProxy: 'http://proxy.store43.example.com:3128',
    noProxy: '.store43.example.com,10.43.0.0/24',
  },
  additionalTrustBundle: { pem: `${PROXY_CA}\n`, policy: 'Proxyonly' },
  nodeLabels: { 'store.example.com/id': '0043' },
};

/** Media for the example store from the generator, in a folder of its own (the caller removes `workDir`). */
export function exampleShapedMedia(workDir: string): InstallerOutput {
  return writeInstallerMedia(workDir, EXAMPLE_STORE);
}

/** Writes examples/ibi-config-media afresh (the installer's auth/kubeconfig stays out of it, as off the ISO). */
export function writeExampleMedia(target = EXAMPLE_MEDIA): void {
  const work = mkdtempSync(path.join(tmpdir(), 'ibi-example-'));
  try {
    const { mediaDir } = exampleShapedMedia(work);
    rmSync(path.join(target, 'cluster-configuration'), { recursive: true, force: true });
    cpSync(mediaDir, target, { recursive: true });
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
