/**
 * Site-configs for the VM, on USB sticks. The VM's uplink ens4 sits on qemu's user network
 * 192.0.2.0/24 whose gateway 192.0.2.1 answers ping (nothing else does, and there is no DNS), so
 * the site network is br-ex as a Linux bridge (the VM has no Open vSwitch) with ens4 as its port,
 * a static address in that network and the default route through 192.0.2.1. ens3, the
 * management link, is never named.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import yaml from 'js-yaml';
import { makeStick } from './stick.js';

export const SITE_NAME = 'vm-store-0007';
export const SITE_HOSTNAME = 'sno-vm-store7';
export const SITE_ADDRESS = '192.0.2.10';
export const SITE_NETWORK = '192.0.2.0/24';
export const GATEWAY = '192.0.2.1';
/** nothing answers here: a gateway that cuts the node off */
export const DEAD_GATEWAY = '192.0.2.254';
export const INTERNAL_IP = '192.168.127.10/24';
/** the factory address of ens4 (DHCP from qemu), which a rollback must bring back */
export const FACTORY_UPLINK_ADDRESS = '192.0.2.100';
export const STICK_LABEL = 'cluster-config';
export const SITE_SSH_KEY =
  'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAINPQ5lM0oqeSYvHk0SQkGA7JrVNCRP8Pp7Pq+SEqGHIx support@vm-store-0007';

/** Registry credentials unique to this test process, so a hit anywhere is this run's leak. */
export interface SiteSecret {
  registry: string;
  /** user:password, the decoded form */
  plain: string;
  /** base64 of plain, the form in the auth file */
  auth: string;
  /** every form a leak could take */
  needles: string[];
}

export function newSecret(): SiteSecret {
  const password = `vm-e2e-${randomBytes(12).toString('hex')}`;
  const plain = `store7-puller:${password}`;
  const auth = Buffer.from(plain).toString('base64');
  return { registry: 'registry.vm-store-0007.example.com:5000', plain, auth, needles: [password, auth] };
}

export interface SiteOptions {
  gateway?: string;
  /** br-ex takes its site address from qemu's DHCP server instead of SITE_ADDRESS */
  dhcp?: boolean;
  verifyTimeoutSeconds?: number;
}

/** The site network in nmstate: br-ex with ens4 as its port, at SITE_ADDRESS (or by DHCP), routed by the gateway. */
export function siteNmstate(opts: SiteOptions = {}): Record<string, unknown> {
  return {
    interfaces: [
      {
        name: 'br-ex',
        type: 'linux-bridge',
        state: 'up',
        bridge: { options: { stp: { enabled: false } }, port: [{ name: 'ens4' }] },
        ipv4: opts.dhcp
          ? { enabled: true, dhcp: true }
          : { enabled: true, dhcp: false, address: [{ ip: SITE_ADDRESS, 'prefix-length': 24 }] },
        ipv6: { enabled: false },
      },
      { name: 'ens4', type: 'ethernet', state: 'up', ipv4: { enabled: false }, ipv6: { enabled: false } },
    ],
    routes: {
      config: [
        { destination: '0.0.0.0/0', 'next-hop-address': opts.gateway ?? GATEWAY, 'next-hop-interface': 'br-ex' },
      ],
    },
  };
}

export function siteSpec(secret: SiteSecret, opts: SiteOptions = {}): Record<string, unknown> {
  return {
    baseDomain: 'vm-store-0007.example.com',
    hostname: SITE_HOSTNAME,
    network: {
      nmstate: siteNmstate(opts),
      internalIP: INTERNAL_IP,
      // nodeip-configuration's hint: the node-ip-hint step writes it through the agent's sandbox
      machineNetworks: [SITE_NETWORK],
      verify: { pingGateway: true, timeoutSeconds: opts.verifyTimeoutSeconds ?? 60 },
    },
    pullSecret: { auths: { [secret.registry]: { auth: secret.auth } } },
    sshAuthorizedKeys: [SITE_SSH_KEY],
  };
}

export function siteConfigYaml(spec: Record<string, unknown>): string {
  return yaml.dump({ apiVersion: 'sno-relocate/v1', kind: 'SiteConfig', metadata: { name: SITE_NAME }, spec });
}

/** A stick labelled cluster-config (ext4: the label is too long for FAT) holding site-config.yaml. */
export function siteStick(dir: string, fileName: string, spec: Record<string, unknown>): Promise<string> {
  return makeStick({
    dir,
    fileName,
    label: STICK_LABEL,
    files: [{ name: 'site-config.yaml', contents: siteConfigYaml(spec) }],
  });
}

/**
 * The same stick signed as the factory signs it: the agent's own `sign` (`agent`, the executable
 * under test) writes site-config.sig over the site-config with the private key `key`; `options`
 * are further options of `sign` (--bind-machine-id ID).
 */
export async function signedSiteStick(
  dir: string,
  fileName: string,
  spec: Record<string, unknown>,
  agent: string,
  key: string,
  notAfter?: Date,
  options: string[] = [],
): Promise<string> {
  const folder = await mkdtemp(join(tmpdir(), 'sno-e2e-signed-'));
  try {
    await writeFile(join(folder, 'site-config.yaml'), siteConfigYaml(spec));
    await promisify(execFile)(agent, [
      'sign',
      '--key',
      key,
      ...(notAfter ? ['--not-after', notAfter.toISOString()] : []),
      ...options,
      folder,
    ]);
    return await makeStick({
      dir,
      fileName,
      label: STICK_LABEL,
      files: [
        // as signed: with --node-key, sign has sealed its secrets in place
        { name: 'site-config.yaml', contents: await readFile(join(folder, 'site-config.yaml'), 'utf8') },
        { name: 'site-config.sig', contents: await readFile(join(folder, 'site-config.sig'), 'utf8') },
      ],
    });
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
}
