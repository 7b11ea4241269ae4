/**
 * The rendered MachineConfig the model of the machine-config daemon works from, and what both sides
 * of the model share: the host renders it (render.ts) and the guest's daemon (daemon.ts) applies
 * and validates it. Only the Ignition 3 parts the project's MachineConfigs and OpenShift's kubelet
 * and pull-secret templates use: files (data: URLs), systemd units with drop-ins, and the SSH keys
 * of `core` (the installer's 99-master-ssh MachineConfig).
 */

export interface IgnFile {
  path: string;
  mode?: number;
  overwrite?: boolean;
  user?: { id?: number };
  group?: { id?: number };
  contents?: { source?: string; compression?: string };
}

export interface IgnDropin {
  name: string;
  contents?: string;
}

export interface IgnUnit {
  name: string;
  enabled?: boolean;
  mask?: boolean;
  contents?: string;
  dropins?: IgnDropin[];
}

/** A user of the passwd section: the daemon takes only `core` and its SSH keys (reconcile.go validatePasswdChanges). */
export interface IgnUser {
  name: string;
  sshAuthorizedKeys?: string[];
  passwordHash?: string;
}

export interface IgnConfig {
  ignition: { version: string };
  passwd?: { users?: IgnUser[] };
  storage?: { files?: IgnFile[] };
  systemd?: { units?: IgnUnit[] };
}

/** A (rendered) MachineConfig, as the daemon gets it from the API. */
export interface RenderedConfig {
  metadata: { name: string; labels?: Record<string, string> };
  spec: { config: IgnConfig };
}

/** The model's folder in the guest: its node annotations, events, configs and settings. */
export const MODEL_DIR = '/var/lib/mcd-model';
/** The desired config: the test drops a rendered config here (the node's desiredConfig annotation). */
export const DESIRED_FILE = `${MODEL_DIR}/desired.json`;
/**
 * The config the daemon last applied, where the daemon keeps it (4.18 daemon.go:176
 * currentConfigPath, written by storeCurrentConfigOnDisk :1833-1844): the agent reads it too.
 */
export const CURRENT_CONFIG_FILE = '/etc/machine-config-daemon/currentconfig';
/** The node's annotations as the daemon sets them (machineconfiguration.openshift.io/state, ...). */
export const NODE_FILE = `${MODEL_DIR}/node.json`;
/** The Kubernetes events the daemon emits, one JSON object a line. */
export const EVENTS_FILE = `${MODEL_DIR}/events.jsonl`;
/**
 * Which release's daemon runs (read at start): `release-4.17`; `release-4.18`, the branch as it is
 * since dd559ec99 (2026-03-11: enablement check, only changed units written); `release-4.18-before-dd559ec99`,
 * the 4.18.z builds before it, which write units and validate them as 4.17 does.
 */
export const RELEASE_FILE = `${MODEL_DIR}/release`;
export const RELEASES = ['release-4.17', 'release-4.18', 'release-4.18-before-dd559ec99'] as const;
export type Release = (typeof RELEASES)[number];
/** upstream pkg/daemon/constants/constants.go MachineConfigDaemonForceFile */
export const FORCE_FILE = '/run/machine-config-daemon-force';
export const MODEL_UNIT = 'mcd-model.service';

export const STATE_KEY = 'machineconfiguration.openshift.io/state';
export const REASON_KEY = 'machineconfiguration.openshift.io/reason';
export const CURRENT_KEY = 'machineconfiguration.openshift.io/currentConfig';
export const DESIRED_KEY = 'machineconfiguration.openshift.io/desiredConfig';

export interface McdEvent {
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
  /** boot id of the guest when the event was emitted */
  boot: string;
}
