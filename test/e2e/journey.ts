/**
 * What the journeys (journey-*.test.ts) share with the scenarios that move one booted node from
 * stick to stick: waiting for the agent's next run, a stick swapped for the next, a stick refused
 * with nothing changed, what the domain step left in the cluster and what else of a site the
 * cluster holds, read back through the real API the node's run wrote to; and the agent's next
 * version in a registry the node pulls it from, for an upgrade through the MachineConfig.
 *
 * The one boundary of an upgrade that cannot run here is the registry and podman pulling from it:
 * a stand-in podman serves images from a folder named by digest, refusing any other image or command.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import { promisify } from 'node:util';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { CONFIG_NAMESPACE, MANAGED_BY, MANAGED_BY_LABEL, ROUTER_NAMESPACE } from '../../src/kube/openshift.js';
import type { ClusterEnv } from '../cluster/env.js';
import { INSTALL_ADDRESS, settleMasterPool } from '../factory/env.js';
import { expect } from 'vitest';
import type { DiskEntry } from './disk.js';
import { mcdJournal, openshiftConfigs, renderConfig, waitMcdSettled } from './mcd-model/install.js';
import type { RenderedConfig } from './mcd-model/ignition.js';
import {
  AGENT_BINARY,
  AGENT_UNIT,
  machineConfigPayload,
  type MachineConfig,
  renderMachineConfigs,
} from './node-image.js';
import { diffSnapshots, events, MessageId, NODE_TREES, shq, snapshotTrees } from './node-checks.js';
import { MIN, waitAgentExited, waitAgentSucceeded } from './scenario.js';
import { STICK_LABEL } from './sites.js';
import { makeStick, type StickFs } from './stick.js';
import { REPO_ROOT, type SshResult, type Vm } from './vm.js';

const exec = promisify(execFile);

/** Waits until the agent's run number `n` of this boot has finished, and expects it to have succeeded. */
export async function waitRun(v: Vm, n: number): Promise<void> {
  await v.waitFor(
    `journalctl -b 0 -q -o cat --no-pager MESSAGE_ID=${MessageId.runFinished} | wc -l`,
    (r) => Number(r.stdout.trim()) >= n,
    6 * MIN,
  );
  await waitAgentSucceeded(v);
}

/** Unplugs the stick of the last run and plugs the next one; waits for that run to succeed. */
export async function moveTo(v: Vm, stick: string): Promise<void> {
  const runs = (await events(v, 'runFinished')).length;
  await v.unplugStick();
  await v.plugStick(stick);
  await waitRun(v, runs + 1);
}

export interface DomainView {
  /** the agent's kubernetes.io/tls Secrets (openshift-config, openshift-ingress): name, DNS names of the certificate */
  certificates: Record<string, string[]>;
  /** the same certificates: when each starts to be valid (ms since the epoch), as the host's openssl reads it */
  starts: Record<string, number>;
  /** ingress.config/cluster, apiserver.config/cluster and the default IngressController, as JSON */
  configs: string;
}

/**
 * What the domain step left in the cluster: each of the agent's serving certificates with the names
 * the host's openssl reads in it, and the three config objects it writes to. Read once the models
 * have settled (the kube-apiserver's restarts for the named certificate).
 */
export async function domainView(env: ClusterEnv): Promise<DomainView> {
  await env.models!.settled();
  const kc = env.cluster.kubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  const custom = kc.makeApiClient(CustomObjectsApi);
  const secrets = (
    await Promise.all(
      [CONFIG_NAMESPACE, ROUTER_NAMESPACE].map((namespace) =>
        core.listNamespacedSecret({ namespace, labelSelector: `${MANAGED_BY_LABEL}=${MANAGED_BY}` }),
      ),
    )
  ).flatMap((l) => l.items.filter((s) => s.type === 'kubernetes.io/tls'));
  const dir = await mkdtemp(join(tmpdir(), 'sno-e2e-domain-'));
  const certificates: Record<string, string[]> = {};
  const starts: Record<string, number> = {};
  try {
    for (const s of secrets) {
      const file = join(dir, 'tls.crt');
      await writeFile(file, Buffer.from(s.data!['tls.crt']!, 'base64'));
      const x509 = (args: string[]) => exec('openssl', ['x509', '-noout', ...args, '-in', file]);
      const name = `${s.metadata!.namespace}/${s.metadata!.name}`;
      const san = (await x509(['-ext', 'subjectAltName'])).stdout;
      certificates[name] = [...san.matchAll(/DNS:([^,\s]+)/g)].map((m) => m[1]!).sort();
      starts[name] = Date.parse(/^notBefore=(.+)$/m.exec((await x509(['-startdate'])).stdout)![1]!);
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  const configs = await Promise.all([
    custom.getClusterCustomObject({
      group: 'config.openshift.io',
      version: 'v1',
      plural: 'ingresses',
      name: 'cluster',
    }),
    custom.getClusterCustomObject({
      group: 'config.openshift.io',
      version: 'v1',
      plural: 'apiservers',
      name: 'cluster',
    }),
    custom.getNamespacedCustomObject({
      group: 'operator.openshift.io',
      version: 'v1',
      namespace: 'openshift-ingress-operator',
      plural: 'ingresscontrollers',
      name: 'default',
    }),
  ]);
  return { certificates, starts, configs: JSON.stringify(configs.map((o) => (o as { spec?: unknown }).spec)) };
}

/**
 * Plugs `stick` and expects the agent to refuse it (exit 3) when it is admitted: no step begun, and
 * the hostname, the links and every file under NODE_TREES as they were. Unplugs it; returns the
 * agent's journal of this boot, which says why.
 */
export async function expectRefusedUnchanged(v: Vm, stick: string): Promise<string> {
  const links = 'ip -o link show | cut -d: -f2 | sort';
  const before = { hostname: await v.sshOk('hostnamectl hostname'), links: await v.sshOk(links) };
  const trees = await snapshotTrees(v, NODE_TREES);
  const id = await v.plugStick(stick);
  await waitAgentExited(v, '3/');
  expect(await events(v, 'stepStarted')).toEqual([]);
  expect(diffSnapshots(trees, await snapshotTrees(v, NODE_TREES))).toEqual([]);
  expect({ hostname: await v.sshOk('hostnamectl hostname'), links: await v.sshOk(links) }).toEqual(before);
  await v.unplugStick(id);
  return v.sshOk(`journalctl -b 0 -u ${AGENT_UNIT} -o cat --no-pager`);
}

/**
 * A site's folder (a site-config, or the config media the installer wrote: test/ibi/installer-media.ts)
 * signed as the factory signs it, by the agent's own `sign` (`agent`, the executable under test) with
 * the private key `key` and the further options `options` (with --node-key it seals the folder's
 * secrets in place), then every file of it, as signed, written onto a stick (an ISO 9660 image for
 * a BMC's virtual media, or ext4 for a USB stick), labelled cluster-config.
 */
export async function signedFolderStick(
  dir: string,
  folder: string,
  agent: string,
  key: string,
  options: string[],
  stick: { fs: StickFs; fileName: string },
): Promise<string> {
  await exec(agent, ['sign', '--key', key, ...options, folder]);
  const names = (await readdir(folder, { recursive: true, withFileTypes: true }))
    .filter((e) => e.isFile())
    .map((e) => posix.relative(folder, join(e.parentPath, e.name)));
  return makeStick({
    dir,
    label: STICK_LABEL,
    ...stick,
    files: await Promise.all(names.map(async (name) => ({ name, contents: await readFile(join(folder, name)) }))),
  });
}

/** where on the node a site's names could linger: configuration, kubelet, the users' homes */
const NODE_PLACES = ['/etc', '/var/lib/kubelet', '/home/core', '/root'];

/** The files under the node's configuration, kubelet's folder and the users' homes that name `text`. */
export const nodeFilesNaming = async (v: Vm, text: string): Promise<string[]> =>
  (await v.ssh(`grep -rlsF -- ${shq(text)} ${NODE_PLACES.join(' ')}`)).stdout.split('\n').filter(Boolean);

export interface SiteView {
  /** the host of every Route, in every namespace, sorted */
  routes: string[];
  /** openshift-config/pull-secret: its auths, as the nodes pull with them */
  pullSecret: Record<string, { auth?: string }>;
  /** every ImageDigestMirrorSet's and ImageTagMirrorSet's spec, as JSON */
  mirrorSets: string;
}

/** What else of a site the cluster holds: the Routes' hosts, the cluster pull secret, the mirror sets. */
export async function siteView(env: ClusterEnv): Promise<SiteView> {
  const kc = env.cluster.kubeConfig();
  const custom = kc.makeApiClient(CustomObjectsApi);
  const list = async (group: string, plural: string) =>
    ((await custom.listClusterCustomObject({ group, version: 'v1', plural })) as { items: { spec?: unknown }[] }).items;
  const routes = (await list('route.openshift.io', 'routes'))
    .map((r) => (r.spec as { host?: string }).host ?? '')
    .sort();
  const secret = await kc
    .makeApiClient(CoreV1Api)
    .readNamespacedSecret({ namespace: CONFIG_NAMESPACE, name: 'pull-secret' });
  const pullSecret = (
    JSON.parse(Buffer.from(secret.data!['.dockerconfigjson']!, 'base64').toString()) as {
      auths: SiteView['pullSecret'];
    }
  ).auths;
  const sets = await Promise.all(
    ['imagedigestmirrorsets', 'imagetagmirrorsets'].map((plural) => list('config.openshift.io', plural)),
  );
  return { routes, pullSecret, mirrorSets: JSON.stringify(sets.flat().map((m) => m.spec)) };
}

/** the registry the agent's images are pulled from, in the stand-in below */
const AGENT_REPOSITORY = 'registry.factory.example.com:5000/sno-relocate/agent';
/** the registry's images on the node, one folder per digest holding the image's sno-relocate */
const REGISTRY_DIR = '/var/lib/e2e-registry';
/** while this file exists the registry cannot be reached (a site with no way to it) */
export const REGISTRY_DOWN = '/var/lib/e2e-registry-unreachable';
export const INSTALL_UNIT = 'sno-relocate-install.service';

// stand-in for podman pull/create/cp/rm against a registry folder (<digest>/sno-relocate per image)
// and the node's container storage: `pull` copies an image into storage, `--policy missing` (as
// podman's) pulls only an image storage does not hold, `create` and `cp` read storage
const STORAGE_DIR = '/var/lib/e2e-podman-storage';
const PODMAN_STANDIN = `#!/bin/sh
# Test only: podman pulling from a registry, which cannot run in this VM
set -e
case "$1" in
  pull) shift; policy=always
        while [ $# -gt 1 ]; do
          case "$1" in
            --authfile) shift 2 ;;
            --policy) policy=$2; shift 2 ;;
            *) echo "podman stand-in: pull $1 is not modelled" >&2; exit 125 ;;
          esac
        done
        case "$1" in ${AGENT_REPOSITORY}@sha256:*) ;; *) echo "Error: $1: not this registry" >&2; exit 125 ;; esac
        digest=\${1##*@sha256:}
        [ "$policy" = missing ] && [ -x "${STORAGE_DIR}/$digest/sno-relocate" ] && exit 0
        [ -e ${REGISTRY_DOWN} ] && { echo "Error: $1: pinging container registry: dial tcp: connect: network is unreachable" >&2; exit 125; }
        [ -x "${REGISTRY_DIR}/$digest/sno-relocate" ] || { echo "Error: $1: manifest unknown" >&2; exit 125; }
        mkdir -p "${STORAGE_DIR}/$digest"; cp "${REGISTRY_DIR}/$digest/sno-relocate" "${STORAGE_DIR}/$digest/" ;;
  create) [ -d "${STORAGE_DIR}/\${2##*@sha256:}" ] || exit 125; echo "ctr-\${2##*@sha256:}" ;;
  cp) [ "\${2#*:}" = /usr/local/bin/sno-relocate ] || exit 125
      id=\${2%%:*}; cp "${STORAGE_DIR}/\${id#ctr-}/sno-relocate" "$3" ;;
  rm) ;;
  *) echo "podman stand-in: $1 is not modelled" >&2; exit 125 ;;
esac
`;

export interface NextAgent {
  /** `sno-relocate X`, as dist/'s binary says its version */
  versionN: string;
  /** the same with the next version */
  versionNext: string;
  /** the image of the next version, by digest */
  imageNext: string;
  /** for the node image: the stand-in podman, and the next version in the registry (only it: N is not there) */
  entries: DiskEntry[];
}

/** Version N+1 of the agent: the same sources stamped with the next version by build.sh, built under `dir`. */
export async function buildNextAgent(dir: string): Promise<NextAgent> {
  const run = promisify(execFile);
  const versionN = (await run(join(REPO_ROOT, 'dist/sno-relocate'), ['--version'])).stdout.trim();
  const nextDir = join(dir, 'next');
  await run('bash', [join(REPO_ROOT, 'build.sh')], {
    cwd: REPO_ROOT,
    env: { ...process.env, SNO_RELOCATE_DIST: nextDir, SNO_RELOCATE_VERSION: `${versionN.split(' ')[1]}-next` },
    maxBuffer: 16 * 1024 * 1024,
  });
  const next = await readFile(join(nextDir, 'sno-relocate'));
  const digest = createHash('sha256').update(next).digest('hex');
  return {
    versionN,
    versionNext: `${versionN}-next`,
    imageNext: `${AGENT_REPOSITORY}@sha256:${digest}`,
    entries: [
      { path: '/usr/local/bin/podman', mode: 0o755, contents: PODMAN_STANDIN },
      { path: posix.join(REGISTRY_DIR, digest, 'sno-relocate'), mode: 0o755, contents: next },
    ],
  };
}

/**
 * The master pool's rendered config as the controller renders it: OpenShift's MachineConfigs with
 * `pullSecret`, the project's naming `agentImage`, and `more` (a MachineConfig made in the cluster).
 */
export async function renderNaming(
  name: string,
  agentImage: string,
  pullSecret: string,
  more: Parameters<typeof renderConfig>[1] = [],
): Promise<RenderedConfig> {
  const saved = process.env.SNO_RELOCATE_IMAGE;
  process.env.SNO_RELOCATE_IMAGE = agentImage;
  try {
    return renderConfig(name, [...openshiftConfigs(pullSecret), ...(await renderMachineConfigs()), ...more]);
  } finally {
    if (saved === undefined) delete process.env.SNO_RELOCATE_IMAGE;
    else process.env.SNO_RELOCATE_IMAGE = saved;
  }
}

/** After the daemon's reboot: up again, the installer's boot run done, the daemon Done in `config`. */
export async function rebootedInto(v: Vm, config: string, sticks: string[]): Promise<void> {
  await v.waitGuestStopped(5 * MIN);
  await v.bootAgain({ sticks });
  await v.waitSsh();
  await v.waitFor(
    `systemctl show -p ActiveState -p ExecMainExitTimestampMonotonic ${INSTALL_UNIT}`,
    (r) => /^ActiveState=(inactive|failed)$/m.test(r.stdout) && !/=0$/m.test(r.stdout),
    5 * MIN,
  );
  expect(await waitMcdSettled(v, config), await mcdJournal(v)).toMatchObject({
    state: 'Done',
    currentConfig: config,
  });
}

/** where the factory's public signing key is handed to `factory prepare --trust` on the node */
const GUEST_TRUST = '/var/tmp/factory-trust';
export const TRUST_ANCHOR = '/etc/sno-relocate/trust/factory.pub';

/**
 * `factory prepare --trust` on a node at the factory, as the factory runs it: the agent's boot-time
 * wait for a site-config stopped (the factory has run for far longer than it waits), br-ex as
 * ovs-configuration left it at installation (the install address first), the factory's public
 * signing key `publicKey` handed to the node. Returns prepare's result.
 */
export async function factoryPrepare(v: Vm, publicKey: string): Promise<SshResult> {
  await v.sshOk(`systemctl stop ${AGENT_UNIT}`);
  await v.sshOk(
    `ip link add br-ex type bridge && ip addr add ${INSTALL_ADDRESS} dev br-ex && ip addr add 10.1.2.3/24 dev br-ex && ip link set br-ex up`,
  );
  await v.sshOk(`mkdir -p ${GUEST_TRUST} && cat >${GUEST_TRUST}/factory.pub`, { input: publicKey });
  return v.ssh(`${AGENT_BINARY} factory prepare --trust ${GUEST_TRUST}`, { timeoutMs: 5 * MIN });
}

/**
 * The machine-config daemon's part after prepare, which does not run here: the files of the
 * MachineConfig prepare created that the node image (laid out from the MachineConfigs without a
 * key) lacks, the trust anchors, written as the daemon writes a file (its folder made first when
 * missing); then the pool updated. Returns the anchors' paths.
 */
export async function applyTrustAnchors(v: Vm, env: ClusterEnv): Promise<string[]> {
  const kc = env.cluster.kubeConfig();
  const created = (await kc.makeApiClient(CustomObjectsApi).getClusterCustomObject({
    group: 'machineconfiguration.openshift.io',
    version: 'v1',
    plural: 'machineconfigs',
    name: '50-master-sno-relocate',
  })) as MachineConfig;
  const anchors = (await machineConfigPayload([created])).entries.flatMap((e) =>
    'contents' in e && e.path.startsWith(`${posix.dirname(TRUST_ANCHOR)}/`) ? [e] : [],
  );
  for (const e of anchors)
    await v.sshOk(
      `mkdir -p ${posix.dirname(e.path)} && cat >${e.path} && chmod ${(e.mode ?? 0o644).toString(8)} ${e.path}`,
      { input: e.contents },
    );
  await settleMasterPool(kc);
  return anchors.map((e) => e.path);
}
