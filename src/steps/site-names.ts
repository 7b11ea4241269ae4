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
import { StepError } from '../base/errors.js';
import type { Change, PlanResult } from '../engine/step.js';
import type { Step } from './step.js';
import { DNSMASQ_UNIT, FACTORY_DNSMASQ_FILE, SITE_DNSMASQ_FILE } from '../node/dnsmasq.js';
import { fileChange, type HostFile, readHostFile } from '../node/managed-file.js';
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

export const siteNamesStep: Step<SiteNamesView> = {
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

  plan(view, site): PlanResult {
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
    return { action: 'change', summary: `resolve ${want.summary} on the node`, changes };
  },

  async apply(ctx, view) {
    const want = wantedNames(view, ctx.site);
    if (want.kind !== 'names') throw new StepError(`site-names: ${want.reason}`, { step: 'site-names' });
    await restartWithFiles(ctx, DNSMASQ, want.file ? [want.file] : []);
    ctx.log.info({ file: SITE_DNSMASQ_FILE, unit: DNSMASQ_UNIT }, `dnsmasq restarted: it resolves ${want.summary}`);
  },
};
