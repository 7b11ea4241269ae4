/**
 * `factory prepare`: makes a single-node cluster relocatable, either after installation (on the
 * running node) or before it (install manifests). The internal IP is the address the installation
 * gave br-ex, as the relocation enhancement has it ("the same IP as ovs-configuration.service
 * configured on the br-ex bridge during the installation"), so kubelet, CRI-O, etcd and the
 * serving certificates keep the address they were made with wherever the node goes.
 *
 * On the node it reads br-ex's first address (the one OVN-Kubernetes takes as the node IP), checks
 * it is the Node's InternalIP and that the cluster is relocatable, records what it decided
 * (record.ts), opens the kubelet gate for the factory (the gate MachineConfig would otherwise keep
 * kubelet down after the reboot that applies it), and creates or updates the MachineConfigs,
 * saying what each costs the node (disruption.ts).
 */
import { isDeepStrictEqual } from 'node:util';
import { formatCidr, parseCidr } from '../base/addresses.js';
import { RefusedError, StepError } from '../base/errors.js';
import { firstNodeAddress, interfaceAddresses } from '../node/addresses.js';
import { BR_EX, KUBELET_NODE_IP_DROP_IN } from '../node/internal-ip.js';
import { openGate } from '../node/kubelet-gate.js';
import { FACTORY_RECORD } from '../base/node-files.js';
import {
  type AgentSources,
  type MachineConfig,
  type MachineConfigOptions,
  renderMachineConfigs,
} from '../node/machineconfig.js';
import type { Clock } from '../ports/clock.js';
import type { Exec } from '../ports/exec.js';
import type { RootFs } from '../ports/fs.js';
import type { Kube, KubeObject } from '../ports/kube.js';
import { type ConfigChange, configChange } from './disruption.js';
import { ensureNodeKey, type NodeKey } from '../trust/node-key.js';
import { clusterPreconditions, MACHINE_CONFIG_API } from './preconditions.js';
import { declaredFiles, driftFromRendered } from '../node/rendered-config.js';
import {
  type FactoryRecord,
  makeRecord,
  parseRecord,
  readFactoryRecord,
  recordedFamilies,
  recordedInternalIPs,
  recordText,
  writeFactoryRecord,
} from '../node/factory-record.js';

/** what the kubelet gate's marker holds while the node is at the factory (until `factory seal`) */
export const FACTORY_GATE = 'factory';

export interface AppliedConfig extends ConfigChange {
  name: string;
  action: 'create' | 'update' | 'unchanged';
}

export interface PrepareResult {
  node: string;
  installAddress: string;
  record: FactoryRecord;
  /** the node's key: its recipient goes into the fleet inventory's node-key column */
  nodeKey: NodeKey;
  configs: AppliedConfig[];
}

export interface PrepareContext {
  fs: RootFs;
  exec: Exec;
  kube: Kube;
  clock: Clock;
  stateDir: string;
  sources: AgentSources;
  options: Omit<MachineConfigOptions, 'internalIP'>;
  /** refuse to seal the node key to anything but a TPM2 */
  requireTpm?: boolean;
}

interface NodeObject extends KubeObject {
  status?: { addresses?: { type: string; address: string }[] };
}

/**
 * br-ex's first address of each family the Node has an InternalIP of, in the Node's order (its
 * primary family first): the install addresses; IPv4 then IPv6 for a Node that lists none.
 */
async function installAddresses(exec: Exec, node: NodeObject): Promise<string[]> {
  if ((await interfaceAddresses(exec, BR_EX)) === undefined)
    throw new StepError(
      `there is no ${BR_EX} here: run factory prepare on the cluster's node (it reads the install address on ${BR_EX} and writes the kubelet gate and its record there)`,
    );
  const listed = [...new Set(nodeInternalIPs(node).map((ip) => parseCidr(ip).family))];
  const families: (4 | 6)[] = listed.length > 0 ? listed : [4, 6];
  const found: string[] = [];
  for (const family of families) {
    const first = await firstNodeAddress(exec, BR_EX, family);
    if (first) found.push(formatCidr(parseCidr(first)));
    // a Node listing no InternalIP: the first family found is the one
    if (listed.length === 0 && found.length > 0) break;
  }
  if (found.length === 0) throw new StepError(`${BR_EX} has no address OVN-Kubernetes would take as the node IP`);
  return found;
}

const nodeInternalIPs = (node: NodeObject): string[] =>
  (node.status?.addresses ?? []).filter((a) => a.type === 'InternalIP').map((a) => a.address);

/** A file of a MachineConfig the cluster holds, decoded. */
function fileIn(mc: MachineConfig | undefined, path: string): string | undefined {
  const file = mc?.spec.config.storage?.files?.find((f) => f.path === path);
  return file && Buffer.from(file.contents.source.replace(/^data:[^,]*;base64,/, ''), 'base64').toString('utf8');
}

/** The IP a MachineConfig file pins kubelet to, when the cluster holds one already. */
function pinnedIn(mc: MachineConfig | undefined): string | undefined {
  const text = fileIn(mc, KUBELET_NODE_IP_DROP_IN);
  return text === undefined ? undefined : /KUBELET_NODE_IP=([^"\s]+)/.exec(text)?.[1];
}

/**
 * The record already made for this install address, byte for byte (the daemon's config first, then
 * the MachineConfig, then the node's file), so a second prepare changes no MachineConfig and the
 * daemon finds its file as declared; undefined when there is none. A record made before the node
 * had a key is kept too: its key reads as absent (factory-record.ts).
 */
async function keptRecord(
  ctx: PrepareContext,
  addresses: string[],
  declared: string | undefined,
  internalIpConfig: MachineConfig | undefined,
): Promise<FactoryRecord | undefined> {
  let onDisk: FactoryRecord | undefined;
  try {
    onDisk = await readFactoryRecord(ctx.fs);
  } catch {
    // a damaged record is made again
  }
  const candidates = [parseRecord(declared), parseRecord(fileIn(internalIpConfig, FACTORY_RECORD)), onDisk];
  return candidates.find(
    (r) =>
      r !== undefined &&
      isDeepStrictEqual(recordedInternalIPs(r), addresses) &&
      isDeepStrictEqual(
        recordedFamilies(r).map((f) => f.installAddress),
        addresses,
      ),
  );
}

const mcRef = (name: string) => ({ apiVersion: MACHINE_CONFIG_API, kind: 'MachineConfig', name });

export async function prepareNode(ctx: PrepareContext): Promise<PrepareResult> {
  const { kube } = ctx;
  const nodes = await kube.list<NodeObject>('v1', 'Node');
  const unmet = await clusterPreconditions(kube, nodes);
  if (unmet.length)
    throw new RefusedError(
      `the cluster is not relocatable; unmet: ${unmet.map((u, i) => `(${i + 1}) ${u}`).join('; ')}; nothing was changed`,
    );
  const node = nodes[0]!;
  const addresses = await installAddresses(ctx.exec, node);
  const address = addresses[0]!;
  const ip = parseCidr(address).ip;
  const internal = nodeInternalIPs(node);
  for (const a of addresses)
    if (internal.length && !internal.includes(parseCidr(a).ip))
      throw new RefusedError(
        `${BR_EX}'s first address ${a} is not an InternalIP of Node ${node.metadata.name} (${internal.join(', ')}): this is not the cluster's node, or its node IP was moved; nothing was changed`,
      );
  const names = renderMachineConfigs(ctx.sources, { ...ctx.options, internalIP: addresses }).map(
    (mc) => mc.metadata.name,
  );
  const current = new Map<string, MachineConfig | undefined>();
  for (const name of names) current.set(name, await kube.get<MachineConfig & KubeObject>(mcRef(name)));
  for (const [name, mc] of current) {
    const pinned = pinnedIn(mc);
    if (pinned !== undefined && pinned !== ip)
      throw new RefusedError(
        `MachineConfig ${name} pins the node IP ${pinned}, but ${BR_EX}'s install address is ${address}: delete that MachineConfig only if the node really moved; nothing was changed`,
      );
  }
  const internalIpConfig = [...current.values()].find((mc) => pinnedIn(mc) !== undefined);
  const daemon = await declaredFiles(ctx.fs);
  const kept = await keptRecord(ctx, addresses, daemon?.files.get(FACTORY_RECORD), internalIpConfig);
  // a new record differs from any the daemon declares, with or without the key it is about to name
  const drift = driftFromRendered(
    daemon,
    FACTORY_RECORD,
    recordText(kept ?? makeRecord(node.metadata.name, addresses, ctx.clock.now())),
  );
  if (drift)
    throw new RefusedError(
      `${drift}: it records another install address than ${BR_EX}'s ${addresses.join(' and ')}; nothing was changed`,
    );
  const nodeKey = await ensureNodeKey(ctx, ctx.clock.now(), ctx.requireTpm);
  const record = kept ?? makeRecord(node.metadata.name, addresses, ctx.clock.now(), nodeKey.recipient);
  const text = recordText(record);
  // before the MachineConfigs: the reboot that applies them must find the gate open and the record written
  await writeFactoryRecord(ctx.fs, record);
  await openGate(ctx.fs, ctx.stateDir, FACTORY_GATE);
  const rendered = renderMachineConfigs(ctx.sources, { ...ctx.options, internalIP: addresses, factoryRecord: text });
  const configs: AppliedConfig[] = [];
  for (const mc of rendered) {
    const before = current.get(mc.metadata.name);
    const change = configChange(before, mc);
    if (!before) await kube.create(mc as MachineConfig & KubeObject);
    else if (!isDeepStrictEqual(before.spec, mc.spec) || !isDeepStrictEqual(before.metadata.labels, mc.metadata.labels))
      await kube.update<MachineConfig & KubeObject>(mcRef(mc.metadata.name), (cur) => ({
        ...cur,
        metadata: { ...cur.metadata, labels: { ...cur.metadata.labels, ...mc.metadata.labels } },
        spec: mc.spec,
      }));
    const action = !before ? 'create' : change.files.length || change.units.length ? 'update' : 'unchanged';
    configs.push({ name: mc.metadata.name, action, ...change });
  }
  return { node: node.metadata.name, installAddress: address, record, nodeKey, configs };
}

/** For the installer's manifests: the MachineConfigs without the kubelet gate (the installation starts kubelet). */
export function installManifests(sources: AgentSources, options: MachineConfigOptions): MachineConfig[] {
  return renderMachineConfigs(sources, options).map((mc) => {
    const units = mc.spec.config.systemd?.units.filter((u) => u.name !== 'kubelet.service');
    const { systemd: _dropped, ...config } = mc.spec.config;
    return { ...mc, spec: { config: { ...config, ...(units?.length ? { systemd: { units } } : {}) } } };
  });
}
