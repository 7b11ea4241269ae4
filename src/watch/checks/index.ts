/** Every check over one snapshot, plus "not installed" for each watched kind the cluster does not serve. */
import type { RawFinding, Snapshot, WatchContext, WatchedObject } from '../model.js';
import { RESOURCES } from '../resources.js';
import { checkCapi } from './capi.js';
import { checkCluster, checkMachine, checkReplicas } from './capi-machines.js';
import { checkLayering, checkPool } from './layering.js';
import { checkCsv, checkInstallPlan, checkOlm, checkSubscription } from './olm.js';
import { checkClusterOperator, checkOperators } from './operators.js';

/**
 * The resources whose findings each come from one object alone, by that object's own check, and
 * that no other check reads: such an object the check has nothing to say about is not kept. A
 * cluster's thousands of Succeeded CSVs, quiet Subscriptions, finished InstallPlans and running
 * Machines then cost no memory; the one that goes wrong is kept from the event that says so.
 */
const OBJECT_CHECKS: ReadonlyMap<string, (object: WatchedObject) => RawFinding[]> = new Map([
  ['subscriptions', checkSubscription],
  ['installplans', checkInstallPlan],
  ['clusterserviceversions', checkCsv],
  ['clusters', (o: WatchedObject) => checkCluster(o)],
  ['machines', (o: WatchedObject) => checkMachine(o)],
  ['privatemachines', (o: WatchedObject) => checkMachine(o)],
  ['machinesets', (o: WatchedObject) => checkReplicas('MachineSet', o)],
  ['machinedeployments', (o: WatchedObject) => checkReplicas('MachineDeployment', o)],
  ['machineconfigpools', checkPool],
  ['clusteroperators', checkClusterOperator],
]);

/** Whether the watcher keeps an object: always, unless its resource's own check finds nothing in it. */
export function worthKeeping(resource: string, object: WatchedObject): boolean {
  const check = OBJECT_CHECKS.get(resource);
  return check === undefined || check(object).length > 0;
}

export function notInstalled(snapshot: Snapshot): RawFinding[] {
  return RESOURCES.filter((r) => !r.builtIn && !r.optional && !snapshot.installed(r.key)).map((r) => ({
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
