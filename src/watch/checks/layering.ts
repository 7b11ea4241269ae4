/**
 * On-cluster layering: each MachineOSConfig's current build, where its images are pushed and pulled
 * from (the factory's registry is gone after relocation), and the pools' build and update state.
 */
import { registryKind, siteHasMirrors } from '../images.js';
import {
  conditionOf,
  describeCondition,
  isTrue,
  nameOf,
  str,
  type RawFinding,
  type Snapshot,
  type WatchContext,
  type WatchedObject,
} from '../model.js';

const MINUTES = 60_000;
export const BUILD_GRACE_MS = 60 * MINUTES;
export const POOL_UPDATE_GRACE_MS = 30 * MINUTES;
export const CURRENT_BUILD_ANNOTATION = 'machineconfiguration.openshift.io/current-machine-os-build';
/** the label the build controller puts on every MachineOSBuild it makes for a MachineOSConfig (MCO constants) */
export const MACHINE_OS_CONFIG_LABEL = 'machineconfiguration.openshift.io/machine-os-config';

const finding = (object: string, rest: Omit<RawFinding, 'component' | 'object'>): RawFinding => ({
  component: 'layering',
  object,
  ...rest,
});

function imageFinding(
  ctx: WatchContext,
  object: string,
  field: string,
  image: string,
  severityIfUnknown: 'warning' | undefined,
): RawFinding[] {
  const kind = registryKind(ctx, image);
  if (kind === 'factory')
    return [
      finding(object, {
        severity: 'error',
        reason: `${field} still points at the factory registry (${image})`,
        hint: 'set spec.renderedImagePushSpec to a site or in-cluster registry and rebuild (annotation machineconfiguration.openshift.io/rebuild)',
      }),
    ];
  if (kind === 'unknown' && severityIfUnknown && siteHasMirrors(ctx))
    return [
      finding(object, {
        severity: severityIfUnknown,
        reason: `${field} is on a registry the site does not mirror (${image})`,
      }),
    ];
  return [];
}

/** The newest MachineOSBuild labelled for the named MachineOSConfig (by creation, then name). */
function newestBuildFor(mosc: string, builds: readonly WatchedObject[]): WatchedObject | undefined {
  const key = (b: WatchedObject) => `${b.metadata.creationTimestamp ?? ''}\u0000${b.metadata.name}`;
  return builds
    .filter((b) => b.metadata.labels?.[MACHINE_OS_CONFIG_LABEL] === mosc)
    .reduce<WatchedObject | undefined>((newest, b) => (!newest || key(b) > key(newest) ? b : newest), undefined);
}

export function checkMachineOSConfig(
  ctx: WatchContext,
  mosc: WatchedObject,
  builds: readonly WatchedObject[],
): RawFinding[] {
  const object = nameOf('MachineOSConfig', mosc);
  const out: RawFinding[] = [];
  // v1 and v1alpha1 spell these differently
  const pushSpec =
    str(mosc.spec?.renderedImagePushSpec) ??
    str((mosc.spec?.buildInputs as Record<string, unknown> | undefined)?.renderedImagePushspec);
  const pullSpec = str(mosc.status?.currentImagePullSpec) ?? str(mosc.status?.currentImagePullspec);
  if (pushSpec) out.push(...imageFinding(ctx, object, 'renderedImagePushSpec', pushSpec, 'warning'));
  if (pullSpec) out.push(...imageFinding(ctx, object, 'currentImagePullSpec', pullSpec, undefined));

  const named =
    mosc.metadata.annotations?.[CURRENT_BUILD_ANNOTATION] ??
    str((mosc.status?.machineOSBuild as { name?: string } | undefined)?.name);
  // only the build the config names is its current one; before it names any, its newest build is
  const current = named ?? newestBuildFor(mosc.metadata.name, builds)?.metadata.name;
  if (!current) return out;
  const build = builds.find((b) => b.metadata.name === current);
  if (!build)
    return [
      ...out,
      finding(object, {
        severity: 'warning',
        reason: `current MachineOSBuild ${current} not found`,
        escalate: { afterMs: POOL_UPDATE_GRACE_MS, to: 'error' },
      }),
    ];
  const buildName = nameOf('MachineOSBuild', build);
  for (const terminal of ['Failed', 'Interrupted']) {
    const c = conditionOf(build, terminal);
    if (c?.status === 'True') {
      out.push(
        finding(buildName, {
          severity: 'error',
          reason: `${terminal}${describeCondition(c) ? `: ${describeCondition(c)}` : ''}`,
          hint: `built for ${object}; its build objects in openshift-machine-config-operator are kept for debugging`,
          ...(c.lastTransitionTime && { since: c.lastTransitionTime }),
        }),
      );
      return out;
    }
  }
  if (isTrue(build, 'Succeeded')) {
    const digested = str(build.status?.digestedImagePushSpec) ?? str(build.status?.finalImagePullspec);
    if (digested && pullSpec !== digested)
      out.push(
        finding(object, {
          severity: 'info',
          reason: `built image ${digested} not rolled out yet`,
          escalate: { afterMs: POOL_UPDATE_GRACE_MS, to: 'warning' },
        }),
      );
    return out;
  }
  const building = conditionOf(build, 'Building') ?? conditionOf(build, 'Prepared');
  return [
    ...out,
    finding(buildName, {
      severity: 'info',
      reason: building?.status === 'True' ? building.type : 'waiting to build',
      ...(building?.lastTransitionTime && { since: building.lastTransitionTime }),
      escalate: { afterMs: BUILD_GRACE_MS, to: 'warning' },
    }),
  ];
}

const POOL_ERRORS = ['NodeDegraded', 'RenderDegraded', 'ImageBuildDegraded', 'BuildFailed', 'PinnedImageSetsDegraded'];

export function checkPool(pool: WatchedObject): RawFinding[] {
  const object = nameOf('MachineConfigPool', pool);
  const specific = POOL_ERRORS.filter((type) => isTrue(pool, type));
  // the aggregate Degraded repeats the specific ones: it is reported only when it stands alone
  const types = specific.length > 0 ? specific : isTrue(pool, 'Degraded') ? ['Degraded'] : [];
  const out = types.map((type) => {
    const c = conditionOf(pool, type)!;
    return finding(object, {
      severity: 'error',
      reason: `${type}${describeCondition(c) ? `: ${describeCondition(c)}` : ''}`,
      ...(c.lastTransitionTime && { since: c.lastTransitionTime }),
    });
  });
  const updating = conditionOf(pool, 'Updating');
  if (updating?.status === 'True')
    out.push(
      finding(object, {
        severity: 'info',
        reason: 'Updating',
        ...(updating.lastTransitionTime && { since: updating.lastTransitionTime }),
        escalate: { afterMs: POOL_UPDATE_GRACE_MS, to: 'warning' },
      }),
    );
  return out;
}

export function checkLayering(snapshot: Snapshot, ctx: WatchContext): RawFinding[] {
  const builds = snapshot.list('machineosbuilds');
  return [
    ...snapshot.list('machineosconfigs').flatMap((m) => checkMachineOSConfig(ctx, m, builds)),
    ...snapshot.list('machineconfigpools').flatMap(checkPool),
  ];
}
