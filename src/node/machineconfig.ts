/**
 * The factory MachineConfigs: what puts the agent on a node through the Machine Config Operator.
 * A MachineConfig carries Ignition 3.2 content (files as data: URLs, systemd units), and etcd takes
 * about 1.5 MiB a request, so they carry the units, the udev rule, the internal-IP files and the
 * binary installer, never the executable itself.
 */
import yaml from 'js-yaml';
import { nodeIpFiles } from './internal-ip.js';

export const IGNITION_VERSION = '3.2.0';
export const ROLE = 'master';
export const INSTALL_ENV = '/etc/sno-relocate/install.env';
export const TRUST_DIR = '/etc/sno-relocate/trust';

/** The units and scripts of the agent, as they are in systemd/ of this repository. */
export interface AgentSources {
  units: Record<string, string>;
  udevRule: string;
  installScript: string;
}

export interface MachineConfigOptions {
  /** the br-ex internal node IP fixed at the factory, CIDR */
  internalIP: string;
  /** the container image the installer extracts the agent from; no installer settings when unset */
  image?: string;
  /** trust anchors: file name to PEM public key, installed under /etc/sno-relocate/trust/ */
  trustAnchors?: Record<string, string>;
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
}

export interface MachineConfig {
  apiVersion: 'machineconfiguration.openshift.io/v1';
  kind: 'MachineConfig';
  metadata: { name: string; labels: Record<string, string> };
  spec: { config: { ignition: { version: string }; storage?: { files: IgnitionFile[] }; systemd?: { units: IgnitionUnit[] } } };
}

/** Ignition takes file contents as data: URLs; base64 keeps scripts and keys byte-exact. */
export function dataUrl(content: string): string {
  return `data:text/plain;charset=utf-8;base64,${Buffer.from(content, 'utf8').toString('base64')}`;
}

const file = (path: string, content: string, mode: number): IgnitionFile => ({ path, mode, overwrite: true, contents: { source: dataUrl(content) } });

function machineConfig(name: string, files: IgnitionFile[], units: IgnitionUnit[]): MachineConfig {
  return {
    apiVersion: 'machineconfiguration.openshift.io/v1',
    kind: 'MachineConfig',
    metadata: { name, labels: { 'machineconfiguration.openshift.io/role': ROLE } },
    spec: {
      config: {
        ignition: { version: IGNITION_VERSION },
        ...(files.length ? { storage: { files } } : {}),
        ...(units.length ? { systemd: { units } } : {}),
      },
    },
  };
}

export function renderMachineConfigs(sources: AgentSources, options: MachineConfigOptions): MachineConfig[] {
  const agentFiles = [
    file('/etc/udev/rules.d/99-sno-relocate.rules', sources.udevRule, 0o644),
    file('/usr/local/libexec/sno-relocate-install', sources.installScript, 0o755),
    ...(options.image ? [file(INSTALL_ENV, `# the image sno-relocate-install.service extracts the agent from\nSNO_RELOCATE_IMAGE=${options.image}\n`, 0o644)] : []),
    ...Object.entries(options.trustAnchors ?? {})
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([name, pem]) => file(`${TRUST_DIR}/${name}`, pem, 0o644)),
  ];
  const agentUnits: IgnitionUnit[] = [
    ...Object.entries(sources.units)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([name, contents]) => ({ name, enabled: true, contents })),
    // the kubelet gate: disabled at the factory, enabled and started by the agent at the site
    { name: 'kubelet.service', enabled: false },
  ];
  return [
    machineConfig(`50-${ROLE}-sno-relocate`, agentFiles, agentUnits),
    machineConfig(
      `51-${ROLE}-sno-relocate-internal-ip`,
      nodeIpFiles(options.internalIP).map((f) => file(f.path, f.content, f.mode)),
      [],
    ),
  ];
}

export function machineConfigYaml(mc: MachineConfig): string {
  return `# Rendered by scripts/render-machineconfigs.ts from systemd/ and src/node/; do not edit by hand.\n${yaml.dump(mc, { lineWidth: -1, noRefs: true })}`;
}
