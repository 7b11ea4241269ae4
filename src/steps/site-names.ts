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
import type { Change, PlanResult } from '../engine/step.js';
import type { Step } from './step.js';
import { DNSMASQ_UNIT, FACTORY_DNSMASQ_FILE, SITE_DNSMASQ_FILE } from '../node/dnsmasq.js';
import { fileChange, type HostFile, type ManagedFile, readHostFile } from '../node/managed-file.js';
import { restartPending, restartWithFiles, type ServiceFiles } from '../node/restart-with-files.js';
import { type NodeNames, readNodeNames, wantedNames } from '../node/site-names.js';

const DNSMASQ: ServiceFiles = {
  step: 'site-names',
  unit: DNSMASQ_UNIT,
  marker: 'dnsmasq-restart-pending',
  paths: [SITE_DNSMASQ_FILE],
  describe: SITE_DNSMASQ_FILE,
};

/** What the step reads: the node's names, the agent's file, and whether a restart is owed. */
export interface SiteNamesView extends NodeNames {
  siteFile?: HostFile;
  restartPending: boolean;
}

/**
 * What apply does: dnsmasq restarted with the agent's file as `files` has it (none: removed);
 * `resolves` the names and addresses, for the journal.
 */
export interface SiteNamesDecision {
  files: ManagedFile[];
  resolves: string;
}

export const siteNamesStep: Step<SiteNamesView, SiteNamesDecision> = {
  name: 'site-names',
  group: 'node',
  description:
    "the site's api, api-int and *.apps names for the internal IP in dnsmasq (single-node dnsmasq configuration only), restarted over D-Bus",
  inputs: (site) => ({
    baseDomain: site.baseDomain,
    clusterName: site.clusterName ?? null,
    internalIP: site.network.internalIP ?? null,
  }),

  async survey(ctx) {
    const siteFile = await readHostFile(ctx.fs, SITE_DNSMASQ_FILE);
    return {
      ...(await readNodeNames(ctx.fs)),
      ...(siteFile && { siteFile }),
      restartPending: await restartPending(ctx, DNSMASQ),
    };
  },

  plan(view, site): PlanResult<SiteNamesDecision> {
    const want = wantedNames(view, site);
    if (want.kind === 'none') return { action: 'noop', reason: want.reason };
    if (want.kind === 'conflict') return { action: 'conflict', reason: want.reason };
    const changes: Change[] = [];
    if (want.file) {
      const change = fileChange(view.siteFile, want.file, "the site's names for dnsmasq");
      if (change) changes.push(change);
    } else if (view.siteFile)
      changes.push({
        action: 'delete',
        target: SITE_DNSMASQ_FILE,
        summary: `${FACTORY_DNSMASQ_FILE} names the site's domain already`,
      });
    if (changes.length === 0 && !view.restartPending)
      return { action: 'noop', reason: `dnsmasq resolves ${want.summary}` };
    changes.push({
      action: 'start',
      target: DNSMASQ_UNIT,
      summary:
        changes.length === 0
          ? 'restart: a previous run changed its files but did not restart it'
          : 'restart over D-Bus, so that it reads the changed file',
    });
    return {
      action: 'change',
      summary: `resolve ${want.summary} on the node`,
      changes,
      decision: { files: want.file ? [want.file] : [], resolves: want.summary },
    };
  },

  async apply(ctx, { files, resolves }) {
    await restartWithFiles(ctx, DNSMASQ, files);
    ctx.log.info({ file: SITE_DNSMASQ_FILE, unit: DNSMASQ_UNIT }, `dnsmasq restarted: it resolves ${resolves}`);
  },
};
