/**
 * OLM: catalog connections (and the images behind them), subscriptions, install plans, CSVs and the
 * packages API service. Polarity follows OLM: Subscription conditions are "abnormal-true".
 */
import { onlyDigestMirrored, registryKind, siteHasMirrors } from '../images.js';
import {
  conditionOf,
  conditionsOf,
  describeCondition,
  nameOf,
  str,
  type RawFinding,
  type Snapshot,
  type WatchContext,
  type WatchedObject,
} from '../model.js';
import { PACKAGES_API_SERVICE } from '../resources.js';

const MINUTES = 60_000;
/** a catalog that has not connected after this long is broken, not starting */
export const CATALOG_GRACE_MS = 5 * MINUTES;
/** an operator still installing after this long is stuck */
export const INSTALL_GRACE_MS = 15 * MINUTES;

const finding = (object: string, rest: Omit<RawFinding, 'component' | 'object'>): RawFinding => ({
  component: 'olm',
  object,
  ...rest,
});

function catalogImage(ctx: WatchContext, object: string, image: string): { findings: RawFinding[]; why?: string } {
  const kind = registryKind(ctx, image);
  if (kind === 'factory') {
    return {
      why: 'its image is on the factory registry',
      findings: [
        finding(object, {
          severity: 'error',
          reason: `image ${image} is on the factory registry`,
          hint: 'point spec.image at the site registry or a mirrored source',
        }),
      ],
    };
  }
  if (onlyDigestMirrored(ctx, image)) {
    return {
      why: 'its image is pulled by tag and only digest mirrors exist',
      findings: [
        finding(object, {
          severity: 'warning',
          reason: `image ${image} is pulled by tag and only digest mirrors cover it`,
          hint: 'digest mirrors (IDMS/ICSP) do not apply to tags: add an imageTagMirrors entry for its repository, or pin spec.image by digest',
        }),
      ],
    };
  }
  if (siteHasMirrors(ctx) && kind === 'unknown') {
    return {
      why: 'its registry is not mirrored at this site',
      findings: [
        finding(object, {
          severity: 'warning',
          reason: `image ${image} is on a registry the site does not mirror`,
          hint: 'mirror the catalog to the site registry or add a mirror for its repository',
        }),
      ],
    };
  }
  return { findings: [] };
}

export function checkCatalogSource(ctx: WatchContext, cs: WatchedObject): RawFinding[] {
  const object = nameOf('CatalogSource', cs);
  const image = str(cs.spec?.image);
  const address = str(cs.spec?.address);
  const imageCheck = image ? catalogImage(ctx, object, image) : { findings: [] };
  const out = [...imageCheck.findings];
  const because = imageCheck.why ? `; ${imageCheck.why}` : '';
  const reason = str(cs.status?.reason);
  if (reason)
    out.push(
      finding(object, {
        severity: 'error',
        reason: `${reason}${cs.status?.message ? `: ${String(cs.status.message)}` : ''}`,
      }),
    );
  const connection = cs.status?.connectionState as { lastObservedState?: string; lastConnect?: string } | undefined;
  const state = connection?.lastObservedState;
  if (!image && address) {
    // HyperShift serves the default catalogs from the management side: nothing here can fix them
    if (state && state !== 'READY')
      out.push(
        finding(object, { severity: 'info', reason: `${state} (served from ${address}, outside this cluster)` }),
      );
    return out;
  }
  if (state === 'READY' || cs.spec?.sourceType === 'configmap' || cs.spec?.sourceType === 'internal') return out;
  const hint =
    'check the registry pod in this namespace (label olm.catalogSource) for ErrImagePull, and the pull secret and mirrors for its image';
  if (state === 'TRANSIENT_FAILURE' || state === 'SHUTDOWN') {
    out.push(
      finding(object, {
        severity: 'warning',
        reason: `${state}${because}`,
        hint,
        escalate: { afterMs: CATALOG_GRACE_MS, to: 'error' },
      }),
    );
  } else if (state === 'CONNECTING' || state === 'IDLE') {
    out.push(
      finding(object, {
        severity: 'info',
        reason: `${state}${because}`,
        hint,
        escalate: { afterMs: CATALOG_GRACE_MS, to: 'error' },
      }),
    );
  } else if (state === undefined) {
    out.push(
      finding(object, {
        severity: 'info',
        reason: 'no connection state reported yet',
        hint,
        escalate: { afterMs: CATALOG_GRACE_MS, to: 'warning' },
      }),
    );
  } else {
    out.push(finding(object, { severity: 'warning', reason: `${state}${because}`, hint }));
  }
  return out;
}

/** Subscription condition types that mean trouble when True, with the severity they carry. */
const SUBSCRIPTION_TROUBLE: Record<string, 'warning' | 'error'> = {
  ResolutionFailed: 'error',
  InstallPlanFailed: 'error',
  BundleUnpackFailed: 'error',
  CatalogSourcesUnhealthy: 'warning',
  InstallPlanMissing: 'warning',
};

export function checkSubscription(sub: WatchedObject): RawFinding[] {
  const object = nameOf('Subscription', sub);
  const out: RawFinding[] = [];
  for (const c of conditionsOf(sub)) {
    const severity = SUBSCRIPTION_TROUBLE[c.type];
    if (severity && c.status === 'True') {
      out.push(
        finding(object, {
          severity,
          reason: `${c.type}${describeCondition(c) ? `: ${describeCondition(c)}` : ''}`,
          ...(c.lastTransitionTime && { since: c.lastTransitionTime }),
        }),
      );
    }
  }
  const pending = conditionOf(sub, 'InstallPlanPending');
  if (pending?.status === 'True' && pending.reason === 'RequiresApproval') {
    out.push(
      finding(object, {
        severity: 'info',
        reason: 'an InstallPlan waits for manual approval',
        ...(pending.lastTransitionTime && { since: pending.lastTransitionTime }),
      }),
    );
  }
  if (sub.status?.state === 'UpgradeFailed' && !out.some((f) => f.severity === 'error'))
    out.push(finding(object, { severity: 'error', reason: 'UpgradeFailed' }));
  return out;
}

export function checkInstallPlan(ip: WatchedObject): RawFinding[] {
  const object = nameOf('InstallPlan', ip);
  const phase = str(ip.status?.phase);
  if (phase === 'Failed') {
    const installed = conditionOf(ip, 'Installed');
    const detail = installed ? describeCondition(installed) : str(ip.status?.message);
    return [
      finding(object, {
        severity: 'error',
        reason: `Failed${detail ? `: ${detail}` : ''}`,
        ...(installed?.lastTransitionTime && { since: installed.lastTransitionTime }),
      }),
    ];
  }
  if (phase === 'Installing')
    return [
      finding(object, {
        severity: 'info',
        reason: 'Installing',
        escalate: { afterMs: INSTALL_GRACE_MS, to: 'warning' },
      }),
    ];
  return [];
}

const CSV_CERT_REASONS = new Set([
  'NeedsCertRotation',
  'APIServiceResourceIssue',
  'APIServiceResourcesNeedReinstall',
  'APIServiceInstallFailed',
]);

export function checkCsv(csv: WatchedObject): RawFinding[] {
  const object = nameOf('ClusterServiceVersion', csv);
  const phase = str(csv.status?.phase) ?? '';
  const reason = str(csv.status?.reason);
  const message = str(csv.status?.message);
  const detail = [reason, message].filter(Boolean).join(': ');
  const since = str(csv.status?.lastTransitionTime);
  const at = since ? { since } : {};
  const hint =
    reason && CSV_CERT_REASONS.has(reason)
      ? 'OLM rotates the serving certificates of the operator it installed; a changed cluster domain or CA can make it reinstall them'
      : undefined;
  const withHint = hint ? { hint } : {};
  if (phase === 'Succeeded') return [];
  if (phase === 'Failed')
    return [finding(object, { severity: 'error', reason: `Failed${detail ? `: ${detail}` : ''}`, ...at, ...withHint })];
  if (phase === 'Replacing' || phase === 'Deleting')
    return [finding(object, { severity: 'info', reason: phase, ...at })];
  return [
    finding(object, {
      severity: 'warning',
      reason: `${phase || 'no phase'}${detail ? `: ${detail}` : ''}`,
      ...at,
      ...withHint,
      escalate: { afterMs: INSTALL_GRACE_MS, to: 'error' },
    }),
  ];
}

export function checkPackagesApi(snapshot: Snapshot): RawFinding[] {
  const object = `APIService ${PACKAGES_API_SERVICE}`;
  const api = snapshot.get('apiservices', PACKAGES_API_SERVICE);
  if (!api) {
    // without OLM there is no packageserver to register it
    return snapshot.installed('clusterserviceversions')
      ? [
          finding(object, {
            severity: 'warning',
            reason: 'not registered: PackageManifests cannot be listed',
            hint: 'the packageserver CSV in openshift-operator-lifecycle-manager registers it',
          }),
        ]
      : [];
  }
  const available = conditionOf(api, 'Available');
  if (available?.status === 'True') return [];
  return [
    finding(object, {
      severity: 'error',
      reason: `not Available${available && describeCondition(available) ? `: ${describeCondition(available)}` : ''}`,
      hint: 'the packageserver pods in openshift-operator-lifecycle-manager serve it; `oc get packagemanifests` fails until it is Available',
      ...(available?.lastTransitionTime && { since: available.lastTransitionTime }),
    }),
  ];
}

export function checkOlm(snapshot: Snapshot, ctx: WatchContext): RawFinding[] {
  return [
    ...snapshot.list('catalogsources').flatMap((cs) => checkCatalogSource(ctx, cs)),
    ...snapshot.list('subscriptions').flatMap(checkSubscription),
    ...snapshot.list('installplans').flatMap(checkInstallPlan),
    ...snapshot.list('clusterserviceversions').flatMap(checkCsv),
    ...checkPackagesApi(snapshot),
  ];
}
