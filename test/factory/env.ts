/**
 * What the factory tests share: a seeded factory cluster made relocatable (network.config says
 * OVN-Kubernetes, infrastructure.config platform None, the Node's InternalIP), the built executable
 * run on "the node" (a network namespace of its own holding br-ex, with the test API reached
 * through a unix socket, as the node reaches its own API on localhost), and the machine-config
 * daemon's part: the files and units of the cluster's MachineConfigs written under a root.
 */
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import type { MachineConfig } from '../../src/node/machineconfig.js';
import { CURRENT_CONFIG } from '../../src/node/rendered-config.js';
import { FACTORY_NODE_IP, FACTORY_NODE_NAME } from '../kube/factory-cluster.js';
import yaml from 'js-yaml';
import { BINARY, type CliResult, EXAMPLE } from '../helpers/cli.js';
import { noteCliOutput } from '../helpers/error-log.js';

export const INSTALL_ADDRESS = `${FACTORY_NODE_IP}/24`;
/** the master pool's rendered config once the agent's MachineConfigs are in it */
const RENDERED = 'rendered-master-relocatable';

const probe = spawnSync('unshare', ['-rn', 'ip', 'link', 'add', 'probe0', 'type', 'bridge']);
export const netnsAvailable = probe.status === 0;

const CONFIG = { group: 'config.openshift.io', version: 'v1' };

/** What the installer leaves in a single-node cluster on platform none with OVN-Kubernetes. */
export async function seedRelocatable(
  kc: KubeConfig,
  parts: { networkType?: string; platform?: string } = {},
): Promise<void> {
  const custom = kc.makeApiClient(CustomObjectsApi);
  const core = kc.makeApiClient(CoreV1Api);
  const singleton = async (plural: string, kind: string, status: object) => {
    await custom.createClusterCustomObject({
      ...CONFIG,
      plural,
      body: { apiVersion: 'config.openshift.io/v1', kind, metadata: { name: 'cluster' }, spec: {} },
    });
    await custom.patchClusterCustomObjectStatus({
      ...CONFIG,
      plural,
      name: 'cluster',
      body: [{ op: 'add', path: '/status', value: status }],
    });
  };
  await singleton('networks', 'Network', { networkType: parts.networkType ?? 'OVNKubernetes' });
  const platform = parts.platform ?? 'None';
  await singleton('infrastructures', 'Infrastructure', { platform, platformStatus: { type: platform } });
  await core.patchNodeStatus({
    name: FACTORY_NODE_NAME,
    body: [
      {
        op: 'add',
        path: '/status',
        value: {
          addresses: [
            { type: 'InternalIP', address: FACTORY_NODE_IP },
            { type: 'Hostname', address: FACTORY_NODE_NAME },
          ],
        },
      },
    ],
  });
}

/** A unix socket that carries each connection to `host:port`: the namespace's way to the test API. */
async function apiSocket(server: string, dir: string): Promise<{ socket: string; close(): void }> {
  const { hostname, port } = new URL(server);
  const socket = path.join(dir, 'api.sock');
  const relay = net.createServer((c) => {
    const up = net.connect(Number(port), hostname);
    c.pipe(up).pipe(c);
    up.on('error', () => c.destroy());
    c.on('error', () => up.destroy());
  });
  await new Promise<void>((resolve) => relay.listen(socket, resolve));
  return { socket, close: () => relay.close() };
}

/**
 * Runs the built executable in a network namespace whose br-ex holds `addresses` (first first),
 * with `server`'s port on the namespace's loopback leading to the test API.
 */
export async function runOnNode(
  args: readonly string[],
  options: { server: string; addresses: string[] },
): Promise<CliResult> {
  const dir = mkdtempSync(path.join(tmpdir(), 'factory-node-'));
  const relay = await apiSocket(options.server, dir);
  const { port } = new URL(options.server);
  // inside the namespace: the API's port on its loopback, relayed to the socket
  const forward = path.join(dir, 'forward.cjs');
  writeFileSync(
    forward,
    `const net = require('node:net');
net.createServer((c) => {
  const up = net.connect(${JSON.stringify(relay.socket)});
  c.pipe(up).pipe(c);
  up.on('error', () => c.destroy());
  c.on('error', () => up.destroy());
}).listen(${port}, '127.0.0.1');
`,
  );
  const quoted = args.map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
  const script = [
    'set -e',
    'ip link set lo up',
    'ip link add br-ex type bridge',
    'ip link set br-ex up',
    ...options.addresses.map((a) => `ip addr add ${a} dev br-ex`),
    `"${process.execPath}" "${forward}" & relay=$!`,
    'set +e',
    `"${BINARY}" ${quoted}`,
    'code=$?',
    'kill $relay',
    'exit $code',
  ].join('\n');
  try {
    return await spawnAsync('unshare', ['-rn', 'sh', '-c', script], {});
  } finally {
    relay.close();
  }
}

async function spawnAsync(command: string, args: string[], env: Record<string, string>): Promise<CliResult> {
  const child = spawn(command, args, {
    env: { ...process.env, JOURNAL_STREAM: '', INVOCATION_ID: '', ...env },
    timeout: 120_000,
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
  child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', resolve);
  });
  noteCliOutput(stderr, code);
  return { code, stdout, stderr };
}

/** The built executable without blocking this process (whose D-Bus client or relay it may need). */
export const runCliAsync = (args: string[], env: Record<string, string> = {}): Promise<CliResult> =>
  spawnAsync(BINARY, args, env);

const decode = (source: string): string =>
  Buffer.from(source.replace(/^data:[^,]*;base64,/, ''), 'base64').toString('utf8');

/**
 * The machine-config daemon's part, once the node rebooted into the rendered config: every file
 * of the cluster's MachineConfigs written under `root` with its mode, every unit with its drop-ins,
 * enabled units linked into the targets their [Install] section names, and the daemon's record of
 * the config it applied (its files, merged), which it later compares the disk with.
 */
export async function applyMachineConfigs(kc: KubeConfig, root: string): Promise<void> {
  const custom = kc.makeApiClient(CustomObjectsApi);
  const list = (await custom.listClusterCustomObject({
    group: 'machineconfiguration.openshift.io',
    version: 'v1',
    plural: 'machineconfigs',
  })) as { items: MachineConfig[] };
  const put = (file: string, content: string, mode = 0o644) => {
    mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    writeFileSync(path.join(root, file), content, { mode });
  };
  const files = list.items.flatMap((mc) => mc.spec.config.storage?.files ?? []);
  put(CURRENT_CONFIG, JSON.stringify({ metadata: { name: RENDERED }, spec: { config: { storage: { files } } } }));
  for (const mc of list.items) {
    for (const f of mc.spec.config.storage?.files ?? []) put(f.path, decode(f.contents.source), f.mode);
    for (const u of mc.spec.config.systemd?.units ?? []) {
      const unit = `/etc/systemd/system/${u.name}`;
      if (u.contents !== undefined) put(unit, u.contents);
      for (const d of u.dropins ?? []) put(`${unit}.d/${d.name}`, d.contents);
      if (!u.enabled || u.contents === undefined) continue;
      for (const m of u.contents.matchAll(/^WantedBy=(.+)$/gm)) {
        const wants = path.join(root, `etc/systemd/system/${m[1]!.trim()}.wants`);
        mkdirSync(wants, { recursive: true });
        symlinkSync(`/etc/systemd/system/${u.name}`, path.join(wants, u.name));
      }
    }
  }
}

/**
 * The Machine Config Operator's part once the node rebooted into the agent's MachineConfigs: the
 * master pool's rendered config names them among its sources.
 */
export async function settleMasterPool(kc: KubeConfig): Promise<void> {
  const custom = kc.makeApiClient(CustomObjectsApi);
  const pool = {
    group: 'machineconfiguration.openshift.io',
    version: 'v1',
    plural: 'machineconfigpools',
    name: 'master',
  };
  await custom.patchClusterCustomObject({
    ...pool,
    body: [{ op: 'replace', path: '/spec/configuration', value: { name: RENDERED } }],
  });
  await custom.patchClusterCustomObjectStatus({
    ...pool,
    body: [
      {
        op: 'replace',
        path: '/status/configuration',
        value: {
          name: RENDERED,
          source: ['00-master', '50-master-sno-relocate', '51-master-sno-relocate-internal-ip'].map((name) => ({
            apiVersion: 'machineconfiguration.openshift.io/v1',
            kind: 'MachineConfig',
            name,
          })),
        },
      },
    ],
  });
}

const INSTALL_CONFIG = {
  apiVersion: 'v1',
  baseDomain: 'factory.example.com',
  metadata: { name: 'sno' },
  controlPlane: { name: 'master', replicas: 1 },
  compute: [{ name: 'worker', replicas: 0 }],
  networking: { networkType: 'OVNKubernetes', machineNetwork: [{ cidr: '192.168.127.0/24' }] },
  platform: { none: {} },
};

/** A relocatable cluster's install-config.yaml in `dir`, with `parts` replacing its top-level fields. */
export function installConfig(dir: string, parts: Record<string, unknown> = {}): string {
  const file = path.join(dir, 'install-config.yaml');
  writeFileSync(file, yaml.dump({ ...INSTALL_CONFIG, ...parts }));
  return file;
}

/** The example site-config with another spec.network.internalIP, in a folder of its own. */
export function siteWithInternalIP(internalIP: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'factory-site-'));
  cpSync(EXAMPLE, dir, { recursive: true });
  const file = path.join(dir, 'site-config.yaml');
  writeFileSync(file, readFileSync(file, 'utf8').replace('internalIP: 192.168.127.10/24', `internalIP: ${internalIP}`));
  return dir;
}
