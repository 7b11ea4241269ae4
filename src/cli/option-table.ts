/**
 * Every option of the command line, declared once: its kind and default (what node:util parseArgs reads, a
 * number read as a string and checked by args.ts), the value it takes and what it does (what the help prints).
 * Each command's own list is in commands/options.ts, and its handler receives those options typed from this
 * table: a number option as a number.
 */
import { DEFAULT_HEALTH_TIMEOUT_SECONDS } from '../base/timeouts.js';

interface OptionDeclaration {
  /** a number is a whole number, at least `min` (default 0) and at most `max` when set */
  type: 'string' | 'boolean' | 'number';
  default?: string | boolean | number;
  short?: string;
  min?: number;
  max?: number;
  /** what a number counts, for its error: seconds, days */
  unit?: string;
  /** what the help shows after the flag: empty for a switch */
  value: string;
  /** what it does, for the help of the commands that take it */
  help: string;
}

export const OPTIONS = {
  root: { type: 'string', default: '/', value: 'DIR', help: 'resolve every host path under DIR (default /)' },
  'state-dir': {
    type: 'string',
    default: '/var/lib/sno-relocate',
    value: 'DIR',
    help: 'state folder (default /var/lib/sno-relocate)',
  },
  kubeconfig: {
    type: 'string',
    value: 'FILE',
    help: "cluster access (default: the node's localhost kubeconfig, then $KUBECONFIG)",
  },
  'log-level': {
    type: 'string',
    default: 'info',
    value: 'LEVEL',
    help: 'trace, debug, info, warn, error (default info)',
  },
  'log-format': { type: 'string', default: 'text', value: 'FORMAT', help: 'text or json (default text)' },
  output: {
    type: 'string',
    short: 'o',
    value: 'FORMAT',
    help: 'what to print: text (default), json, or yaml where the usage names it',
  },
  only: { type: 'string', value: 'LIST', help: 'only these steps or groups (comma separated)' },
  skip: { type: 'string', value: 'LIST', help: 'leave out these steps or groups' },
  wait: {
    type: 'number',
    default: 0,
    unit: 'seconds',
    value: 'SECONDS',
    help: 'with no PATH, wait this long for a site-config to appear (default 0)',
  },
  console: {
    type: 'string',
    value: 'DEVICE',
    help: 'where the one-line progress banner goes (default /dev/console under systemd)',
  },
  'health-timeout': {
    type: 'number',
    default: DEFAULT_HEALTH_TIMEOUT_SECONDS,
    unit: 'seconds',
    value: 'SEC',
    help: `how long the health step waits for a healthy cluster (default ${DEFAULT_HEALTH_TIMEOUT_SECONDS})`,
  },
  'health-stable': {
    type: 'number',
    default: 120,
    unit: 'seconds',
    value: 'SEC',
    help: 'how long the cluster must stay settled before health calls it done (default 120)',
  },
  once: { type: 'boolean', default: false, value: '', help: 'one sync, print the findings and exit' },
  translate: {
    type: 'boolean',
    default: false,
    value: '',
    help: 'print the native site-config the input becomes instead of checking it',
  },
  inventory: { type: 'string', value: 'FILE', help: 'the inventory: one row per site (CSV)' },
  template: { type: 'string', value: 'DIR', help: 'the site folder template, filled in from each row' },
  iso: { type: 'boolean', default: false, value: '', help: 'pack each site folder as <site>.iso as well' },
  'hub-objects': {
    type: 'string',
    value: 'DIR',
    help: 'also write the hub objects that deliver the site-configs (ManifestWorkReplicaSet)',
  },
  placement: {
    type: 'string',
    value: 'NAMESPACE/NAME',
    help: 'the Placement the hub objects name (needs --hub-objects)',
  },
  kubeconfigs: { type: 'string', value: 'DIR', help: 'one kubeconfig file per cluster' },
  concurrency: { type: 'number', default: 32, min: 1, value: 'N', help: 'clusters read at once (default 32)' },
  timeout: {
    type: 'number',
    default: 5,
    min: 1,
    unit: 'seconds',
    value: 'SECONDS',
    help: 'how long to wait for each cluster (default 5)',
  },
  key: { type: 'string', value: 'FILE', help: 'the private key that signs' },
  site: { type: 'string', value: 'DIR', help: 'the site folder (its site-config names the client CA and the site CA)' },
  user: { type: 'string', value: 'NAME', help: 'the user the kubeconfig authenticates as (default site-admin)' },
  out: { type: 'string', value: 'PATH', help: 'where to write' },
  'not-after': { type: 'string', value: 'DATE', help: 'the signature expires then (for example 2027-03-31)' },
  'bind-machine-id': {
    type: 'string',
    value: 'ID',
    help: 'the signature holds only on the node with this /etc/machine-id',
  },
  'bind-serial': {
    type: 'string',
    value: 'SERIAL',
    help: 'the signature holds only on the node with this serial number',
  },
  generation: {
    type: 'number',
    min: 1,
    value: 'N',
    help: "the folder's generation for its node: the node refuses one older than the last it applied",
  },
  'node-key': {
    type: 'string',
    value: 'RECIPIENT',
    help: "seal the folder's secrets to the node's key (age1..., printed by factory prepare)",
  },
  'require-tpm': {
    type: 'boolean',
    default: false,
    value: '',
    help: "the node key must be sealed to the node's TPM2 (no host-key fallback)",
  },
  'metrics-address': {
    type: 'string',
    default: '127.0.0.1:9464',
    value: 'HOST:PORT',
    help: 'where the Prometheus metrics are served (default 127.0.0.1:9464)',
  },
  'record-events': { type: 'string', value: 'FILE', help: 'record the events watched, for --replay' },
  replay: { type: 'string', value: 'FILE', help: 'replay a recording made with --record-events, without a cluster' },
  manifests: {
    type: 'string',
    value: 'DIR',
    help: "write the MachineConfigs into the installer's manifests folder DIR",
  },
  'install-config': {
    type: 'string',
    value: 'FILE',
    help: "the installer's install-config.yaml, checked for a relocatable cluster",
  },
  'internal-ip': { type: 'string', value: 'CIDR', help: 'the address the installation gives br-ex' },
  image: { type: 'string', value: 'REF', help: 'the container image holding the agent, installed on the node' },
  trust: {
    type: 'string',
    value: 'DIR',
    help: 'the public keys site-configs must be signed with (installed on the node)',
  },
  'shelf-days': {
    type: 'number',
    default: 30,
    max: 3650,
    unit: 'days',
    value: 'N',
    help: 'days the node may wait before it is unpacked: certificates must last (default 30)',
  },
  'power-off': { type: 'boolean', default: false, value: '', help: 'power the node off once sealed' },
  help: { type: 'boolean', short: 'h', default: false, value: '', help: 'this help' },
  version: { type: 'boolean', short: 'V', default: false, value: '', help: 'print the version' },
} as const satisfies Record<string, OptionDeclaration>;

export type OptionName = Exclude<keyof typeof OPTIONS, 'help' | 'version'>;
