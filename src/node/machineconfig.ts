/**
 * The factory MachineConfigs: what puts the agent on a node through the Machine Config Operator.
 * A MachineConfig carries Ignition 3.2 content (files as data: URLs, systemd units), and etcd takes
 * about 1.5 MiB a request, so they carry the units, the udev rule, the internal-IP files and the
 * binary installer, never the executable itself.
 */
import yaml from 'js-yaml';
import { TRUST_DIR } from '../trust/check.js';
import { type InternalIPs, nodeIpFiles } from './internal-ip.js';
import { KUBELET_GATE_DROP_IN, renderKubeletGateDropIn } from './kubelet-gate.js';
import { byCodeUnit } from '../base/order.js';
import { FACTORY_RECORD } from '../base/node-files.js';

export const IGNITION_VERSION = '3.2.0';
export const ROLE = 'master';
export const INSTALL_ENV = '/etc/sno-relocate/install.env';

/** The units and scripts of the agent, as they are in systemd/ of this repository. */
export interface AgentSources {
  units: Record<string, string>;
  udevRule: string;
  installScript: string;
}

export interface MachineConfigOptions {
  /** the br-ex internal node IP fixed at the factory, CIDR; one per family, the primary first, on a dual-stack node */
  internalIP: InternalIPs;
  /** the container image the installer extracts the agent from; no installer settings when unset */
  image?: string;
  /** trust anchors: file name to PEM public key, installed under /etc/sno-relocate/trust/ */
  trustAnchors?: Record<string, string>;
  /** the factory record's text (src/node/factory-record.ts), carried beside the files pinning the internal IP */
  factoryRecord?: string;
}

export interface IgnitionFile {
  path: string;
  mode: number;
  overwrite: true;
  contents: { source: string };
}

export interface IgnitionUnit {
  name: string;
  enabled: boolean;
  contents?: string;
  dropins?: { name: string; contents: string }[];
}

/** A file a MachineConfig puts on the node, before Ignition's encoding. */
export interface PayloadFile {
  path: string;
  mode: number;
  contents: string;
}

/** A systemd unit a MachineConfig installs, or only enables or disables (no contents). */
export interface PayloadUnit {
  name: string;
  enabled: boolean;
  contents?: string;
  dropins: { name: string; contents: string }[];
}

/** What one MachineConfig carries, in the form a node gets it. */
export interface Payload {
  name: string;
  files: PayloadFile[];
  units: PayloadUnit[];
}

export interface MachineConfig {
  apiVersion: 'machineconfiguration.openshift.io/v1';
  kind: 'MachineConfig';
  metadata: { name: string; labels: Record<string, string> };
  spec: {
    config: { ignition: { version: string }; storage?: { files: IgnitionFile[] }; systemd?: { units: IgnitionUnit[] } };
  };
}

/** Ignition takes file contents as data: URLs; base64 keeps scripts and keys byte-exact. */
export function dataUrl(content: string): string {
  return `data:text/plain;charset=utf-8;base64,${Buffer.from(content, 'utf8').toString('base64')}`;
}

const byName = <T>(entries: Record<string, T>): [string, T][] =>
  Object.entries(entries).sort(([a], [b]) => byCodeUnit(a, b));

/**
 * The files and units of every factory MachineConfig, decoded: what a node has once the Machine
 * Config Operator applied them. Images built without the operator (the end-to-end node image)
 * install exactly this.
 */
export function machineConfigPayloads(sources: AgentSources, options: MachineConfigOptions): Payload[] {
  const agentFiles: PayloadFile[] = [
    { path: '/etc/udev/rules.d/99-sno-relocate.rules', mode: 0o644, contents: sources.udevRule },
    { path: '/usr/local/libexec/sno-relocate-install', mode: 0o755, contents: sources.installScript },
    ...(options.image
      ? [
          {
            path: INSTALL_ENV,
            mode: 0o644,
            contents: `# the image sno-relocate-install.service extracts the agent from\nSNO_RELOCATE_IMAGE=${options.image}\n`,
          },
        ]
      : []),
    ...byName(options.trustAnchors ?? {}).map(([name, pem]) => ({
      path: `${TRUST_DIR}/${name}`,
      mode: 0o644,
      contents: pem,
    })),
  ];
  const agentUnits: PayloadUnit[] = [
    ...byName(sources.units).map(([name, contents]) => ({ name, enabled: true, contents, dropins: [] })),
    // the kubelet gate: enabled as OpenShift's own kubelet MachineConfig renders it (so the
    // machine-config daemon never finds its enablement contradicted), held by a drop-in until
    // the agent's marker says the node steps passed (src/node/kubelet-gate.ts)
    {
      name: 'kubelet.service',
      enabled: true,
      dropins: [{ name: KUBELET_GATE_DROP_IN, contents: renderKubeletGateDropIn() }],
    },
  ];
  return [
    { name: `50-${ROLE}-sno-relocate`, files: agentFiles, units: agentUnits },
    {
      name: `51-${ROLE}-sno-relocate-internal-ip`,
      files: [
        ...nodeIpFiles(options.internalIP).map((f) => ({ path: f.path, mode: f.mode, contents: f.content })),
        ...(options.factoryRecord !== undefined
          ? [{ path: FACTORY_RECORD, mode: 0o644, contents: options.factoryRecord }]
          : []),
      ],
      units: [],
    },
  ];
}

function machineConfig({ name, files, units }: Payload): MachineConfig {
  const ignitionFiles = files.map((f): IgnitionFile => ({
    path: f.path,
    mode: f.mode,
    overwrite: true,
    contents: { source: dataUrl(f.contents) },
  }));
  const ignitionUnits = units.map(({ dropins, ...unit }): IgnitionUnit =>
    dropins.length ? { ...unit, dropins } : unit,
  );
  return {
    apiVersion: 'machineconfiguration.openshift.io/v1',
    kind: 'MachineConfig',
    metadata: { name, labels: { 'machineconfiguration.openshift.io/role': ROLE } },
    spec: {
      config: {
        ignition: { version: IGNITION_VERSION },
        ...(ignitionFiles.length ? { storage: { files: ignitionFiles } } : {}),
        ...(ignitionUnits.length ? { systemd: { units: ignitionUnits } } : {}),
      },
    },
  };
}

export function renderMachineConfigs(sources: AgentSources, options: MachineConfigOptions): MachineConfig[] {
  return machineConfigPayloads(sources, options).map(machineConfig);
}

export function machineConfigYaml(mc: MachineConfig): string {
  return `# Rendered by scripts/render-machineconfigs.ts from systemd/ and src/node/; do not edit by hand.\n${yaml.dump(mc, { lineWidth: -1, noRefs: true })}`;
}
