/** Every check over one snapshot, plus "not installed" for each watched kind the cluster does not serve. */
import type { RawFinding, Snapshot, WatchContext } from '../model.js';
import { RESOURCES } from '../resources.js';
import { checkCapi } from './capi.js';
import { checkLayering } from './layering.js';
import { checkOlm } from './olm.js';
import { checkOperators } from './operators.js';

export function notInstalled(snapshot: Snapshot): RawFinding[] {
  return RESOURCES.filter((r) => !r.builtIn && !snapshot.installed(r.key)).map((r) => ({
    component: r.component,
    object: `${r.kind} (${r.group})`,
    severity: 'info',
    reason: 'not installed',
  }));
}

export function runChecks(snapshot: Snapshot, ctx: WatchContext): RawFinding[] {
  return [
    ...notInstalled(snapshot),
    ...checkOlm(snapshot, ctx),
    ...checkCapi(snapshot),
    ...checkLayering(snapshot, ctx),
    ...checkOperators(snapshot),
  ];
}
