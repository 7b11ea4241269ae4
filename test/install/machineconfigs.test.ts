/**
 * The factory MachineConfigs: the committed ones are what a fresh render gives; every file they
 * carry decodes to the byte-identical source with the right path and mode; together they stay far
 * below what etcd takes; and the real kube-apiserver accepts them with the MachineConfig CRD.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { KubeConfig, KubernetesObjectApi } from '@kubernetes/client-node';
import yaml from 'js-yaml';
import { renderKubeletGateDropIn } from '../../src/node/kubelet-gate.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  agentSources,
  DEFAULT_IMAGE,
  DEFAULT_INTERNAL_IP,
  factoryPayloads,
  optionsFromEnv,
  REPO,
  writeMachineConfigs,
} from '../../scripts/render-machineconfigs.js';
import { nodeIpFiles } from '../../src/node/internal-ip.js';
import { type MachineConfig, renderMachineConfigs } from '../../src/node/machineconfig.js';
import { generateSigningKey } from '../../src/trust/signature.js';
import { startCluster, type TestCluster } from '../kube/cluster.js';
import { applyCrds } from '../kube/install.js';

const COMMITTED = path.join(REPO, 'machineconfigs');
const LIMIT = 256 * 1024;

const readAll = (dir: string) =>
  readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .map((f) => ({ file: f, text: readFileSync(path.join(dir, f), 'utf8') }));
const committed = readAll(COMMITTED);
const configs = committed.map((c) => yaml.load(c.text) as MachineConfig);

async function decode(source: string): Promise<string> {
  return (await fetch(source)).text();
}

describe('factory MachineConfigs', () => {
  it('are what a fresh render of systemd/ and the internal-IP renderers gives (./build.sh renders them)', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'mc-'));
    try {
      writeMachineConfigs(dir, { internalIP: DEFAULT_INTERNAL_IP, image: DEFAULT_IMAGE });
      expect(readAll(dir)).toEqual(committed);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('carry every unit, the udev rule and the installer byte for byte, with their modes', async () => {
    const sources = agentSources();
    const files = new Map(configs.flatMap((mc) => mc.spec.config.storage?.files ?? []).map((f) => [f.path, f]));
    const expected: [string, string, number][] = [
      ['/etc/udev/rules.d/99-sno-relocate.rules', sources.udevRule, 0o644],
      ['/usr/local/libexec/sno-relocate-install', sources.installScript, 0o755],
      ...nodeIpFiles(DEFAULT_INTERNAL_IP).map((f): [string, string, number] => [f.path, f.content, f.mode]),
    ];
    for (const [where, content, mode] of expected) {
      const f = files.get(where);
      expect(f, where).toBeDefined();
      expect(await decode(f!.contents.source), where).toBe(content);
      expect(f!.mode, where).toBe(mode);
    }
    expect(await decode(files.get('/etc/sno-relocate/install.env')!.contents.source)).toContain(
      `SNO_RELOCATE_IMAGE=${DEFAULT_IMAGE}\n`,
    );
    const units = new Map(configs.flatMap((mc) => mc.spec.config.systemd?.units ?? []).map((u) => [u.name, u]));
    for (const [name, contents] of Object.entries(sources.units))
      expect(units.get(name)).toEqual({ name, enabled: true, contents });
    // the gate: enabled as OpenShift renders kubelet, held by a drop-in until the agent's marker exists
    expect(units.get('kubelet.service')).toEqual({
      name: 'kubelet.service',
      enabled: true,
      dropins: [{ name: '10-sno-relocate-gate.conf', contents: renderKubeletGateDropIn() }],
    });
    expect(renderKubeletGateDropIn()).toMatch(
      /^\[Unit\]\nWants=sno-relocate-gate\.service\nAfter=sno-relocate-gate\.service\nConditionPathExists=\/var\/lib\/sno-relocate\/kubelet-gate\n$/m,
    );
  });

  it('use absolute paths, decimal modes and Ignition 3.2 on the master role', () => {
    for (const mc of configs) {
      expect(mc.metadata.labels['machineconfiguration.openshift.io/role']).toBe('master');
      expect(mc.spec.config.ignition.version).toBe('3.2.0');
      for (const f of mc.spec.config.storage?.files ?? []) {
        expect(f.path).toMatch(/^\/[^\s]+$/);
        expect(Number.isInteger(f.mode) && f.mode > 0 && f.mode <= 0o7777).toBe(true);
        expect(f.contents.source).toMatch(/^data:/);
      }
    }
  });

  it('list, decoded, the very files and units they carry (what an image built without the operator installs)', async () => {
    const payloads = factoryPayloads();
    expect(payloads.map((p) => p.name)).toEqual(configs.map((mc) => mc.metadata.name));
    for (const [i, mc] of configs.entries()) {
      const files = await Promise.all(
        (mc.spec.config.storage?.files ?? []).map(async (f) => ({
          path: f.path,
          mode: f.mode,
          contents: await decode(f.contents.source),
        })),
      );
      expect(payloads[i]!.files).toEqual(files);
      expect(payloads[i]!.units).toEqual((mc.spec.config.systemd?.units ?? []).map((u) => ({ dropins: [], ...u })));
    }
  });

  it('the layering Containerfile takes the agent from the image the installer pulls', () => {
    expect(readFileSync(path.join(COMMITTED, 'Containerfile'), 'utf8')).toContain(`FROM ${DEFAULT_IMAGE} AS agent\n`);
  });

  it(`stay under ${LIMIT / 1024} KiB together`, () => {
    const total = committed.reduce((sum, c) => sum + Buffer.byteLength(c.text), 0);
    console.log(`MachineConfigs in all: ${(total / 1024).toFixed(1)} KiB (${committed.map((c) => c.file).join(', ')})`);
    expect(total).toBeLessThan(LIMIT);
  });
});

describe('render settings', () => {
  it('install every trust anchor of the folder under /etc/sno-relocate/trust', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'trust-'));
    try {
      const { publicPem } = generateSigningKey();
      writeFileSync(path.join(dir, 'factory-2026.pub'), publicPem);
      writeFileSync(path.join(dir, 'README'), 'not a key, not installed\n');
      const files = renderMachineConfigs(agentSources(), optionsFromEnv({ SNO_RELOCATE_TRUST_DIR: dir }))
        .flatMap((mc) => mc.spec.config.storage?.files ?? [])
        .filter((f) => f.path.startsWith('/etc/sno-relocate/trust/'));
      expect(files.map((f) => [f.path, f.mode])).toEqual([['/etc/sno-relocate/trust/factory-2026.pub', 0o644]]);
      expect(await decode(files[0]!.contents.source)).toBe(publicPem);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('pin the internal IP the factory chose in every internal-IP file', () => {
    const [, internal] = renderMachineConfigs(
      agentSources(),
      optionsFromEnv({ SNO_RELOCATE_INTERNAL_IP: '10.99.0.5/30' }),
    );
    expect(internal!.spec.config.storage!.files.map((f) => f.path)).toEqual(
      nodeIpFiles('10.99.0.5/30').map((f) => f.path),
    );
    expect(yaml.dump(internal)).not.toContain('192.168.127.10');
  });

  it.each([
    [{ SNO_RELOCATE_INTERNAL_IP: '192.168.127.10' }, 'SNO_RELOCATE_INTERNAL_IP: not an IP address with prefix length'],
    [
      { SNO_RELOCATE_INTERNAL_IP: '192.168.300.10/24' },
      'SNO_RELOCATE_INTERNAL_IP: not an IP address with prefix length',
    ],
    [
      { SNO_RELOCATE_IMAGE: 'registry.example.com/agent:1\nSNO_RELOCATE_IMAGE=evil' },
      'SNO_RELOCATE_IMAGE: not a container image reference',
    ],
    [
      { SNO_RELOCATE_IMAGE: 'registry.example.com/agent:0.1.0' },
      'SNO_RELOCATE_IMAGE: name the image by digest (...@sha256:<64 hex digits>): registry.example.com/agent:0.1.0',
    ],
    [{ SNO_RELOCATE_TRUST_DIR: '/nonexistent/trust' }, 'SNO_RELOCATE_TRUST_DIR: cannot read /nonexistent/trust'],
  ])('refuse %j, naming the setting', (env, message) => {
    expect(() => optionsFromEnv(env)).toThrow(message);
  });

  it('refuse a trust folder whose key the agent would not accept', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'trust-'));
    try {
      expect(() => optionsFromEnv({ SNO_RELOCATE_TRUST_DIR: dir })).toThrow(
        `SNO_RELOCATE_TRUST_DIR: no *.pub key in ${dir}`,
      );
      writeFileSync(path.join(dir, 'broken.pub'), 'ssh-ed25519 AAAA factory\n');
      expect(() => optionsFromEnv({ SNO_RELOCATE_TRUST_DIR: dir })).toThrow(
        `SNO_RELOCATE_TRUST_DIR: ${path.join(dir, 'broken.pub')} is not a PEM public key`,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the script reports a bad setting in one line and exits 1, writing nothing', () => {
    const out = mkdtempSync(path.join(tmpdir(), 'mc-'));
    try {
      const result = spawnSync('npx', ['tsx', path.join(REPO, 'scripts/render-machineconfigs.ts'), out], {
        encoding: 'utf8',
        env: { ...process.env, SNO_RELOCATE_INTERNAL_IP: 'banana' },
      });
      expect(result.status).toBe(1);
      expect(
        result.stderr
          .trim()
          .split('\n')
          .filter((l) => !l.startsWith('npm warn')),
      ).toEqual([
        'render-machineconfigs: SNO_RELOCATE_INTERNAL_IP: not an IP address with prefix length (CIDR), e.g. 192.168.127.10/24: "banana"',
      ]);
      expect(readdirSync(out)).toEqual([]);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
});

describe('factory MachineConfigs on a real kube-apiserver', () => {
  let cluster: TestCluster;
  let api: KubernetesObjectApi;
  beforeAll(async () => {
    cluster = await startCluster();
    await applyCrds(cluster.kubeconfigPath, { only: ['machineconfigs.machineconfiguration.openshift.io'] });
    const kc = new KubeConfig();
    kc.loadFromFile(cluster.kubeconfigPath);
    api = KubernetesObjectApi.makeApiClient(kc);
  }, 120_000);
  afterAll(() => cluster?.stop());

  it('are created as they are and read back whole', async () => {
    for (const mc of configs) {
      await api.create(structuredClone(mc));
      const back = (await api.read({
        apiVersion: mc.apiVersion,
        kind: mc.kind,
        metadata: { name: mc.metadata.name },
      })) as unknown as MachineConfig;
      expect(back.metadata.labels).toEqual(mc.metadata.labels);
      expect(back.spec).toEqual(mc.spec);
    }
  });
});
