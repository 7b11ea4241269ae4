import { X509Certificate } from 'node:crypto';
import { siteCaCertificate } from '../../certs/site-certs.js';
import { powerOnByLine, readShipment } from '../../node/shipment.js';
import { safeLine } from '../../log/safe-text.js';
import { AGENT_VERSION } from '../../base/version.js';
import { declinedSteps, StateStore, type RunState } from '../../engine/state.js';
import { STEPS } from '../../steps/index.js';
import { FACTORY_ADMIN_REFUSED, FACTORY_ADMIN_WORKS } from '../../steps/access.js';
import { renderFindings, table } from '../../watch/render.js';
import { readWatchStatus, type WatchStatus } from '../../watch/status-file.js';
import { renderSecretsStatus, secretsStatus } from '../../trust/secrets-record.js';
import { kubeletHeld as kubeletHeldByGate, kubeletHeldLine } from '../../node/kubelet-held.js';
import { type Invocation, oneOf } from '../args.js';
import type { OptionsOf } from './options.js';
import { createRuntime } from '../runtime.js';
import type { CommandResult } from './result.js';

export function renderRunState(state: RunState | undefined): string {
  if (!state) return 'No run recorded yet.\n';
  // a run asked for some steps only (--only/--skip): say which, and that the others were not asked for
  const asked = new Set(state.selected ?? STEPS.map((s) => s.name));
  const notAsked = STEPS.filter((s) => !asked.has(s.name)).map((s) => s.name);
  const partial = notAsked.length
    ? [
        `Asked for: ${[...asked].join(', ')} (${asked.size} of ${STEPS.length} steps)`,
        `Not asked for: ${notAsked.join(', ')}`,
      ]
    : [];
  const lines = [
    `Site:     ${safeLine(state.site)}`,
    `Result:   ${state.result}${notAsked.length ? ' (partial run)' : ''}${state.message ? `: ${safeLine(state.message)}` : ''}`,
    ...partial,
    // what the run declined and went on without (a refused rename): the node as it is, and why
    ...declinedSteps(state).map((d) => `Declined: ${safeLine(d)}`),
    `Started:  ${state.startedAt}${state.finishedAt ? `   Finished: ${state.finishedAt}` : ''}`,
    // after an upgrade or a rollback, the agent that ran the steps is not the one answering
    ...(state.agentVersion !== AGENT_VERSION
      ? [`Run by:   sno-relocate ${state.agentVersion ? safeLine(state.agentVersion) : 'of state version 1'}`]
      : []),
    '',
  ];
  const rows = [['STEP', 'STATUS', 'ATTEMPTS', 'DURATION', 'DETAIL']];
  for (const { name } of STEPS) {
    const r = state.steps[name];
    rows.push([
      name,
      (r?.declined !== undefined ? 'declined' : r?.status) ?? (asked.has(name) ? 'pending' : 'not asked for'),
      r ? String(r.attempts) : '',
      r?.durationMs !== undefined ? `${r.durationMs}ms` : '',
      r?.message ?? '',
    ]);
  }
  return `${[...lines, ...table(rows)].join('\n')}\n`;
}

/** Whether the factory's admin.kubeconfig still works at the site, as the access step last found it. */
export function factoryAdminKubeconfig(state: RunState | undefined): 'works' | 'refused' | 'unknown' {
  const said = state?.steps.access?.message ?? '';
  if (said.includes(FACTORY_ADMIN_REFUSED)) return 'refused';
  if (said.includes(FACTORY_ADMIN_WORKS)) return 'works';
  return 'unknown';
}

const FACTORY_ADMIN_LINE = {
  works: 'still a cluster admin at this site (the site-config keeps it)',
  refused: 'refused at this site (revoked by the site-config)',
  unknown: 'not checked yet: a cluster admin until the access step revokes it',
};

export function renderWatchStatus(watch: WatchStatus, now: Date): string {
  const errors = Object.values(watch.syncErrors).reduce((a, b) => a + b, 0);
  const lines = [
    `Watcher:  ${watch.health}   Updated: ${watch.updatedAt}${watch.lastSyncAt ? `   Last sync: ${watch.lastSyncAt}` : ''}`,
    ...(errors > 0 ? [`Sync errors: ${errors}${watch.lastSyncError ? ` (last: ${watch.lastSyncError})` : ''}`] : []),
    '',
    ...renderFindings(watch.findings, now),
  ];
  return `${lines.join('\n')}\n`;
}

export async function statusCommand(inv: Invocation<OptionsOf<'status'>>): Promise<CommandResult> {
  const format = oneOf('-o', inv.flags.output, ['text', 'json'] as const, 'text');
  const rt = createRuntime(inv.flags);
  const state = await new StateStore(rt.fs, rt.stateDir).load();
  const watch = await readWatchStatus(rt.fs, rt.stateDir);
  const shipment = (await readShipment(rt.fs, rt.stateDir)) ?? null;
  const shipped = shipment
    ? `Shipped:  ${shipment.shippedAt} (factory seal; certificates checked for ${shipment.shelfDays} days on the shelf)\n${shipment.powerOnBy ? `Shelf:    ${powerOnByLine(shipment.powerOnBy)}\n` : ''}`
    : '';
  // the CA generated on the node signs the API certificate: a kubeconfig at the site must trust it
  const siteCA = (await siteCaCertificate(rt.fs, rt.stateDir)) ?? null;
  const caLine = siteCA
    ? `Site CA:  ${new X509Certificate(siteCA).subject.replace(/\n/g, ', ')} (SHA-256 ${new X509Certificate(siteCA).fingerprint256}; the PEM is in status -o json)\n`
    : '';
  const factoryAdmin = factoryAdminKubeconfig(state);
  const factoryLine = `Factory admin kubeconfig: ${FACTORY_ADMIN_LINE[factoryAdmin]}\n`;
  const secrets = await secretsStatus(rt.fs, rt.stateDir);
  // no alert can say it while kubelet is down: status does, with what to do
  const kubeletHeld = (await kubeletHeldByGate(rt.fs, rt.stateDir)) ? kubeletHeldLine(state) : null;
  const heldLine = kubeletHeld ? `Kubelet:  ${safeLine(kubeletHeld)}\n` : '';
  const stdout =
    format === 'json'
      ? `${JSON.stringify({ agentVersion: AGENT_VERSION, run: state ?? null, watch: watch ?? null, siteCA, shipment, factoryAdminKubeconfig: factoryAdmin, secrets, kubeletHeld }, null, 2)}\n`
      : // before the watcher's first sync there is nothing to add to the run's progress
        `Agent:    sno-relocate ${AGENT_VERSION}\n${shipped}${heldLine}${renderRunState(state)}${caLine}${factoryLine}${renderSecretsStatus(secrets)}${watch ? `\n${renderWatchStatus(watch, rt.clock.now())}` : ''}`;
  return { exitCode: 0, stdout };
}
