/**
 * [site-names] On a node with OpenShift's single-node dnsmasq configuration (src/node/dnsmasq.ts),
 * the node resolves api, api-int and *.apps of the site's domain to its internal IP: the cluster
 * steps need that, since the authentication operator checks the OAuth route by requesting its new
 * host from inside the cluster. The names go into a file of the agent's own; the factory's file
 * and names stay, for the on-node kubeconfigs. dnsmasq is restarted through systemd's D-Bus API,
 * and only when the file changed.
 *
 * Resumable: a pending-restart marker in the state folder is written before the file and removed
 * after the restart, so a run cut off between the two restarts dnsmasq the next time. Rolled back:
 * when dnsmasq does not come back with the new file, the previous one is put back and dnsmasq
 * restarted again, so the node keeps resolving its factory names.
 */
import { StepError, VerificationError } from '../base/errors.js';
import { parseCidr } from '../base/addresses.js';
import type { Change, PlanResult } from '../engine/step.js';
import type { LegacySiteStep, StepContext } from '../config/site.js';
import {
  type ClusterNames,
  clusterNames,
  DNSMASQ_UNIT,
  FACTORY_DNSMASQ_FILE,
  pinnedNodeAddress,
  readFactoryNames,
  renderSiteNames,
  SITE_DNSMASQ_FILE,
} from '../node/dnsmasq.js';
import { fileDiffers, type ManagedFile, planFile } from '../node/managed-file.js';
import { restartPending, restartWithFiles, type ServiceFiles } from './restart-with-files.js';

const DNSMASQ: ServiceFiles = {
  step: 'site-names',
  unit: DNSMASQ_UNIT,
  marker: 'dnsmasq-restart-pending',
  paths: [SITE_DNSMASQ_FILE],
  describe: SITE_DNSMASQ_FILE,
};

type Wanted =
  | { kind: 'none'; reason: string }
  | { kind: 'conflict'; reason: string }
  /** file undefined: the factory's file already names the site's domain, so the agent's must go */
  | { kind: 'names'; file?: ManagedFile; summary: string; names: ClusterNames; address: string };

/** The cluster domain of the site, and the address its names should resolve to. */
async function wanted(ctx: StepContext): Promise<Wanted> {
  const factory = await readFactoryNames(ctx.fs);
  if (factory === 'absent')
    return { kind: 'none', reason: `no ${FACTORY_DNSMASQ_FILE}: the node has no single-node dnsmasq configuration` };
  if (factory === undefined)
    return { kind: 'none', reason: `${FACTORY_DNSMASQ_FILE} names no api host: there is no cluster domain to follow` };
  const factoryCluster = factory.domain.split('.')[0]!;
  const cluster = ctx.site.clusterName ?? factoryCluster;
  if (cluster !== factoryCluster)
    return {
      kind: 'conflict',
      reason: `spec.clusterName is ${cluster}, but ${FACTORY_DNSMASQ_FILE} names the cluster ${factoryCluster}: renaming the cluster is not supported`,
    };
  const internal = ctx.site.network.internalIP;
  const address = internal === undefined ? await pinnedNodeAddress(ctx.fs) : parseCidr(internal).ip;
  if (address === undefined)
    return {
      kind: 'none',
      reason: 'the node has no internal IP (neither the site-config nor the kubelet node-IP drop-in sets one)',
    };
  const names = clusterNames(`${cluster}.${ctx.site.baseDomain}`);
  const summary = `${names.api}, ${names.apiInt} and *.${names.apps} to ${address}`;
  if (names.domain === factory.domain && factory.address === address) return { kind: 'names', summary, names, address };
  // root-owned and world-readable, as dnsmasq's own configuration files
  return {
    kind: 'names',
    summary,
    names,
    address,
    file: { path: SITE_DNSMASQ_FILE, content: renderSiteNames(names, address), mode: 0o644, uid: 0, gid: 0 },
  };
}

/** The site's names on a node with the single-node dnsmasq configuration, and their address. */
export async function siteNamesOnNode(ctx: StepContext): Promise<{ names: ClusterNames; address: string } | undefined> {
  const want = await wanted(ctx);
  return want.kind === 'names' ? { names: want.names, address: want.address } : undefined;
}

export const siteNamesStep: LegacySiteStep = {
  name: 'site-names',
  group: 'node',
  description:
    "the site's api, api-int and *.apps names for the internal IP in dnsmasq (single-node dnsmasq configuration only), restarted over D-Bus",
  inputs: (site) => ({
    baseDomain: site.baseDomain,
    clusterName: site.clusterName ?? null,
    internalIP: site.network.internalIP ?? null,
  }),

  async plan(ctx): Promise<PlanResult> {
    const want = await wanted(ctx);
    if (want.kind === 'none') return { action: 'noop', reason: want.reason };
    if (want.kind === 'conflict') return { action: 'conflict', reason: want.reason };
    const changes: Change[] = [];
    if (want.file) {
      const change = await planFile(ctx.fs, want.file, "the site's names for dnsmasq");
      if (change) changes.push(change);
    } else if (await ctx.fs.exists(SITE_DNSMASQ_FILE))
      changes.push({
        action: 'delete',
        target: SITE_DNSMASQ_FILE,
        summary: `${FACTORY_DNSMASQ_FILE} names the site's domain already`,
      });
    const pending = await restartPending(ctx, DNSMASQ);
    if (changes.length === 0 && !pending) return { action: 'noop', reason: `dnsmasq resolves ${want.summary}` };
    changes.push({
      action: 'start',
      target: DNSMASQ_UNIT,
      summary:
        changes.length === 0
          ? 'restart: a previous run changed its files but did not restart it'
          : 'restart over D-Bus, so that it reads the changed file',
    });
    return { action: 'change', summary: `resolve ${want.summary} on the node`, changes };
  },

  async apply(ctx) {
    const want = await wanted(ctx);
    if (want.kind !== 'names') throw new StepError(`site-names: ${want.reason}`, { step: 'site-names' });
    await restartWithFiles(ctx, DNSMASQ, want.file ? [want.file] : []);
    ctx.log.info({ file: SITE_DNSMASQ_FILE, unit: DNSMASQ_UNIT }, `dnsmasq restarted: it resolves ${want.summary}`);
  },

  async verify(ctx) {
    const want = await wanted(ctx);
    if (want.kind !== 'names') return;
    const problems: string[] = [];
    if (want.file) {
      if (await fileDiffers(ctx.fs, want.file)) problems.push(`${SITE_DNSMASQ_FILE} differs`);
    }
    if (await restartPending(ctx, DNSMASQ)) problems.push('dnsmasq was not restarted after the file changed');
    const status = await (await ctx.systemd()).unitStatus(DNSMASQ_UNIT);
    if (status.activeState !== 'active') problems.push(`${DNSMASQ_UNIT} is ${status.activeState} (${status.result})`);
    if (problems.length > 0)
      throw new VerificationError(`site-names: ${problems.join('; ')}`, { step: 'site-names', retryable: true });
  },
};
