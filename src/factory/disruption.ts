/**
 * What the machine-config daemon does to the node when it applies a changed MachineConfig, by its
 * default node-disruption policy (machine-config-operator pkg/apihelpers/apihelpers.go, the default
 * policies; pkg/daemon/update.go calculatePostConfigChangeAction): a change to the kubelet's pull
 * secret or the SSH keys needs nothing, registries.conf and the other image-policy files reload
 * CRI-O, the user CA bundle restarts update-ca-trust and CRI-O, and any other file or any unit
 * reboots the node. A single node is never drained (pkg/daemon/drain.go).
 */
import { isDeepStrictEqual } from 'node:util';
import type { MachineConfig } from '../node/machineconfig.js';

export type Disruption = 'none' | 'reload crio' | 'restart crio' | 'reboot';
const RANK: readonly Disruption[] = ['none', 'reload crio', 'restart crio', 'reboot'];

/** Files the default policy does not reboot for, and what it does instead. */
const FILE_POLICY: readonly { path: string; prefix?: true; action: Disruption }[] = [
  { path: '/var/lib/kubelet/config.json', action: 'none' },
  { path: '/etc/nmstate/openshift', prefix: true, action: 'none' },
  { path: '/etc/containers/registries.conf', action: 'reload crio' },
  { path: '/etc/containers/policy.json', action: 'reload crio' },
  { path: '/etc/containers/registries.d', prefix: true, action: 'reload crio' },
  { path: '/etc/crio/policies', prefix: true, action: 'reload crio' },
  { path: '/etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt', action: 'restart crio' },
];

export function fileDisruption(path: string): Disruption {
  const rule = FILE_POLICY.find((r) => path === r.path || (r.prefix && path.startsWith(`${r.path}/`)));
  return rule?.action ?? 'reboot';
}

export interface ConfigChange {
  /** paths of files added, removed or changed */
  files: string[];
  /** names of units added, removed or changed */
  units: string[];
  disruption: Disruption;
  /** one line on why */
  because: string;
}

type Files = MachineConfig['spec']['config']['storage'];
type Units = MachineConfig['spec']['config']['systemd'];

function changed<T>(before: T[], after: T[], key: (t: T) => string): string[] {
  const old = new Map(before.map((t) => [key(t), t]));
  const now = new Map(after.map((t) => [key(t), t]));
  return [...new Set([...old.keys(), ...now.keys()])].filter((k) => !isDeepStrictEqual(old.get(k), now.get(k))).sort();
}

/** What applying `after` over `before` (undefined: a new MachineConfig) changes, and what that costs the node. */
export function configChange(before: MachineConfig | undefined, after: MachineConfig): ConfigChange {
  const files = (f: Files) => f?.files ?? [];
  const units = (u: Units) => u?.units ?? [];
  const changedFiles = changed(files(before?.spec.config.storage), files(after.spec.config.storage), (f) => f.path);
  const changedUnits = changed(units(before?.spec.config.systemd), units(after.spec.config.systemd), (u) => u.name);
  const actions = changedFiles.map(fileDisruption);
  if (changedUnits.length) actions.push('reboot');
  const disruption = actions.reduce<Disruption>((a, b) => (RANK.indexOf(b) > RANK.indexOf(a) ? b : a), 'none');
  const rebootFiles = changedFiles.filter((f) => fileDisruption(f) === 'reboot');
  const because =
    disruption === 'reboot'
      ? [
          rebootFiles.length
            ? `${rebootFiles.length} file(s) outside the no-reboot policy (${rebootFiles.slice(0, 2).join(', ')}${rebootFiles.length > 2 ? ', ...' : ''})`
            : '',
          changedUnits.length ? `unit(s) ${changedUnits.join(', ')} (every unit change reboots)` : '',
        ]
          .filter(Boolean)
          .join(' and ')
      : disruption === 'none'
        ? changedFiles.length
          ? 'only files the machine-config daemon applies without a reboot'
          : 'nothing changes'
        : `only files the machine-config daemon applies with a CRI-O ${disruption.split(' ')[0]}`;
  return { files: changedFiles, units: changedUnits, disruption, because };
}
