/**
 * [network] The site network through nmstate, never left half-done: the previous state is saved
 * first, the new one is applied under a NetworkManager checkpoint (`apply --no-commit`), checked
 * (the state holds, the gateway answers, the site's names resolve, the internal IP stayed on br-ex)
 * with bounded retries, and then committed, or rolled back with the reason. If the agent dies in
 * between, NetworkManager rolls back by itself when the checkpoint times out.
 *
 * Whether the step is done is read from the node, not from the state file: the current state must
 * hold the desired one, and no NetworkManager keyfile may be empty. A power cut just after
 * NetworkManager wrote its profiles has been seen to leave 0-byte keyfiles while the run was
 * recorded as done; such files are removed and written again by a re-apply, and after a commit the
 * keyfile folder is flushed to disk before success is recorded. A cut while NetworkManager wrote a
 * profile also leaves its temporary copy (`<name>.nmconnection.XXXXXX`, which NetworkManager
 * ignores); those are removed too, so a node that lost power converges to the same files as one
 * that did not.
 */
import path from 'node:path';
import { errorMessage, RolledBackError, StepError, VerificationError } from '../base/errors.js';
import { hashOf } from '../engine/state.js';
import type { Change } from '../engine/step.js';
import { internalIPs as internalIPsOf, type Site } from '../config/site.js';
import type { Step, StepContext } from './step.js';
import type { NmstateState } from '../base/nmstate.js';
import { logEvent } from '../log/logger.js';
import { pollUntil } from '../ports/clock.js';
import { formatCidr, isLinkLocal, parseCidr } from '../base/addresses.js';
import { interfaceAddresses } from '../node/addresses.js';
import { BR_EX, DISPATCHER_SCRIPT, pinnedInternalIPs } from '../node/internal-ip.js';
import {
  compareNetworkState,
  defaultGateways,
  desiredNetworkState,
  differenceLines,
  missingGatewayFamilies,
} from '../node/network-state.js';

export const KEYFILE_DIR = '/etc/NetworkManager/system-connections';
export const REVERT_STATE_FILE = 'network-revert.json';
/** the checkpoint outlives the checks by this much, so that NetworkManager never rolls back under a commit */
const CHECKPOINT_MARGIN_SECONDS = 60;
const PING_WAIT_SECONDS = 1;
const RESOLVE_TIMEOUT_MS = 10_000;

/** NetworkManager writes a profile to `<name>.XXXXXX` and renames it over `<name>` (mkstemp's suffix) */
const NM_TEMP_FILE = /\.nmconnection\.[A-Za-z0-9]{6}$/;

interface Leftovers {
  /** keyfiles a power cut left empty: NetworkManager ignores them, so the profile is gone */
  empty: string[];
  /** NetworkManager's temporary copies from a write a power cut interrupted */
  temporary: string[];
}

/** What a power cut while NetworkManager wrote its profiles leaves in the keyfile folder. */
async function keyfileLeftovers(ctx: StepContext): Promise<Leftovers> {
  const out: Leftovers = { empty: [], temporary: [] };
  for (const name of (await ctx.fs.list(KEYFILE_DIR)).sort()) {
    const file = path.posix.join(KEYFILE_DIR, name);
    if (NM_TEMP_FILE.test(name)) out.temporary.push(file);
    else if (name.endsWith('.nmconnection') && (await ctx.fs.size(file)) === 0) out.empty.push(file);
  }
  return out;
}

async function removeLeftovers(ctx: StepContext, leftovers: Leftovers): Promise<void> {
  for (const file of [...leftovers.empty, ...leftovers.temporary]) {
    await ctx.fs.remove(file);
    ctx.log.warn(
      { file },
      `removed ${leftovers.empty.includes(file) ? 'the empty keyfile' : "NetworkManager's leftover temporary file"} ${file}`,
    );
  }
}

/**
 * The internal IPs the site network keeps on br-ex: the site-config's, else those the node already
 * pins there (the factory's dispatcher script puts it back whatever the site network says), which a
 * site-config without one keeps, as the internal-ip step does. The image-based install's media never
 * names one.
 */
async function internalIPs(ctx: StepContext): Promise<string[]> {
  const site = internalIPsOf(ctx.site.network);
  if (site.length > 0) return site;
  const script = await ctx.fs.readText(DISPATCHER_SCRIPT);
  return script === undefined ? [] : pinnedInternalIPs(script);
}

function describeChecks({ pingGateway, resolve, timeoutSeconds }: Site['network']['verify']): string {
  const checks = [
    'the state holds',
    ...(pingGateway ? ['the gateway answers ping'] : []),
    ...(resolve.length ? [`${resolve.join(', ')} resolve`] : []),
  ];
  return `checks: ${checks.join(', ')}; within ${timeoutSeconds} s, else roll back`;
}

/**
 * getent's database for each family of the node's internal IPs (ahostsv4, ahostsv6): a name is
 * asked for the families the site has, never for one it lacks; `ahosts` (either family) when no
 * internal IP is known.
 */
export const resolveDatabases = (internal: readonly string[]): string[] => {
  const families = [...new Set(internal.map((ip) => parseCidr(ip).family))];
  return families.length > 0 ? families.map((f) => `ahostsv${f}`) : ['ahosts'];
};

/**
 * The checks of the applied network: the site's (the gateway answers, the names resolve, within
 * its time), that `desired` holds (with `internalIPs` on br-ex), and that `internalRequired` (CIDR)
 * stayed on br-ex: the internal IPs that were there before the change.
 */
export type NetworkChecks = Site['network']['verify'] & {
  desired: NmstateState;
  internalIPs: string[];
  internalRequired: string[];
};

/** What is wrong with the network right now; empty when everything the checks ask holds. */
async function problems(ctx: StepContext, checks: NetworkChecks): Promise<string[]> {
  const { desired, internalIPs: internal, internalRequired } = checks;
  const current = await ctx.nmstate.show();
  const out = compareNetworkState(desired, current, internal).map((d) => `${d.path} is ${d.have}, want ${d.want}`);
  if (checks.pingGateway) {
    const gateways = defaultGateways(current);
    if (gateways.length === 0) out.push('no default route, so no gateway to ping');
    else out.push(...missingGatewayFamilies(desired, gateways));
    for (const gw of gateways) {
      // a link-local next hop is only reachable through its interface
      const target = isLinkLocal(gw.address) && gw.iface ? `${gw.address}%${gw.iface}` : gw.address;
      const ping = await ctx.exec.run('ping', ['-c', '1', '-W', String(PING_WAIT_SECONDS), '-n', target], {
        allowFailure: true,
        timeoutMs: 5000,
      });
      if (ping.code !== 0) out.push(`gateway ${target} does not answer ping`);
    }
  }
  const databases = resolveDatabases(internal);
  for (const name of checks.resolve) {
    // getent asks the node's resolver (nsswitch: /etc/hosts, then DNS) as every other program on it
    // does, one family at a time: an answer in any of the site's families will do
    let resolved = false;
    for (const db of databases) {
      const lookup = await ctx.exec.run('getent', [db, name], { allowFailure: true, timeoutMs: RESOLVE_TIMEOUT_MS });
      resolved = lookup.code === 0;
      if (resolved) break;
    }
    if (!resolved) out.push(`${name} does not resolve (asked: ${databases.join(', ')})`);
  }
  if (internalRequired.length > 0) {
    const addresses = await interfaceAddresses(ctx.exec, BR_EX);
    for (const internal of internalRequired)
      if (!addresses?.includes(internal)) out.push(`the internal IP ${internal} is gone from ${BR_EX}`);
  }
  return out;
}

/** Runs the checks until they pass or their timeout passes; returns the last problems (empty: passed). */
async function checkWithRetries(ctx: StepContext, checks: NetworkChecks): Promise<string[]> {
  let last: string[] = [];
  const passed = await pollUntil(
    ctx.clock,
    async () => {
      last = await problems(ctx, checks);
      if (last.length === 0) return true;
      ctx.log.info({ problems: last }, 'network checks not passing yet');
      return undefined;
    },
    { timeoutMs: checks.timeoutSeconds * 1000, intervalMs: 1000, maxIntervalMs: 5000 },
  );
  return passed ? [] : last;
}

/** The desired state the revert record in the state folder was kept for (its hash), if there is one. */
async function revertRecordFor(ctx: StepContext): Promise<string | undefined> {
  const text = await ctx.fs.readText(path.posix.join(ctx.stateDir, REVERT_STATE_FILE));
  if (text === undefined) return undefined;
  try {
    return (JSON.parse(text) as { desiredHash?: string }).desiredHash;
  } catch {
    return undefined;
  }
}

/** The state to go back to, saved as decided (`save`); else the record of an earlier attempt at `desired` is kept. */
async function saveRevertState(ctx: StepContext, desired: NmstateState, save?: NmstateState): Promise<string> {
  const file = path.posix.join(ctx.stateDir, REVERT_STATE_FILE);
  if (save) {
    const record = { savedAt: ctx.clock.now().toISOString(), desiredHash: hashOf(desired), state: save };
    await ctx.fs.writeAtomic(file, `${JSON.stringify(record, null, 2)}\n`, { mode: 0o600 });
  }
  const kept = save === undefined;
  ctx.log.info(
    { revertState: ctx.fs.resolve(file), kept },
    `previous network state ${kept ? 'kept' : 'saved'} in ${ctx.fs.resolve(file)}`,
  );
  return ctx.fs.resolve(file);
}

async function flushToDisk(ctx: StepContext): Promise<void> {
  if (await ctx.fs.exists(KEYFILE_DIR)) await ctx.fs.syncDir(KEYFILE_DIR);
  await ctx.exec.run('sync', []);
}

/** What the step reads: the state it wants and the node's, and what a power cut left of the keyfiles. */
export interface NetworkView {
  desired: NmstateState;
  current: NmstateState;
  /** what the node's network backend cannot apply of the desired state */
  unsupported: string[];
  /** the internal IPs kept on br-ex (the site-config's, or those the node pins), primary family first */
  internalIPs: string[];
  /** the addresses on br-ex now (CIDR; empty without br-ex) */
  onBrEx: string[];
  /** the desired state (its hash) the revert record in the state folder was saved for, if any */
  revertFor?: string;
  leftovers: Leftovers;
}

/**
 * What apply does: remove the `leftovers`; then, when `apply` is there, save `revert` as the state
 * to go back to (absent: the record of an earlier attempt at the same state is kept), apply
 * `desired` under a checkpoint, run the checks, and commit or roll back; at last flush the
 * keyfiles to disk.
 */
export interface NetworkDecision {
  leftovers: Leftovers;
  apply?: { desired: NmstateState; revert?: NmstateState; checks: NetworkChecks };
}

export const networkStep: Step<NetworkView, NetworkDecision> = {
  name: 'network',
  group: 'node',
  description:
    'nmstate apply with a checkpoint; gateway ping, name resolution and the internal IP verified; commit, or roll back and exit 1',
  inputs: (site) => site.network,

  async survey(ctx) {
    const internal = await internalIPs(ctx);
    const desired = desiredNetworkState(ctx.site.network.nmstate, internal);
    return {
      desired,
      current: await ctx.nmstate.show(),
      unsupported: ctx.nmstate.unsupported(desired),
      internalIPs: internal,
      onBrEx: (await interfaceAddresses(ctx.exec, BR_EX)) ?? [],
      ...(await revertRecordFor(ctx).then((h) => (h === undefined ? {} : { revertFor: h }))),
      leftovers: await keyfileLeftovers(ctx),
    };
  },

  plan(view, site) {
    const { desired } = view;
    // refused now, while every step is still planning, not at apply after others changed the node
    if (view.unsupported.length)
      return {
        action: 'conflict',
        reason: `the network backend on this node cannot apply the site network: ${view.unsupported.join('; ')}`,
      };
    const differences = compareNetworkState(desired, view.current, view.internalIPs);
    const { empty, temporary } = view.leftovers;
    const interfaces = desired.interfaces?.length ?? 0;
    if (differences.length === 0 && empty.length === 0 && temporary.length === 0)
      return {
        action: 'noop',
        reason: `the node already runs the site network (${interfaces} interface(s) as desired)`,
      };
    const changes: Change[] = [
      ...empty.map((file) => ({
        action: 'delete' as const,
        target: file,
        summary: 'empty keyfile (a power cut while NetworkManager wrote it); the re-apply writes it again',
      })),
      ...temporary.map((file) => ({
        action: 'delete' as const,
        target: file,
        summary:
          "NetworkManager's temporary copy of a profile (a power cut while it wrote it); NetworkManager ignores it",
      })),
    ];
    const reapply = differences.length > 0 || empty.length > 0;
    const decision: NetworkDecision = { leftovers: view.leftovers };
    if (reapply) {
      changes.push({
        action: 'apply',
        target: 'nmstate',
        summary: describeChecks(site.network.verify),
        diff: differenceLines(differences),
      });
      // an internal IP must survive the change when it was there: kubelet and etcd are bound to it
      const required = view.internalIPs.map((ip) => formatCidr(parseCidr(ip))).filter((c) => view.onBrEx.includes(c));
      decision.apply = {
        desired,
        ...(view.revertFor !== hashOf(desired) && { revert: view.current }),
        checks: { ...site.network.verify, desired, internalIPs: view.internalIPs, internalRequired: required },
      };
    }
    const summary =
      differences.length > 0
        ? `apply the site network (${differences.length} difference(s)) with checkpoint and rollback`
        : reapply
          ? `repair ${empty.length} empty NetworkManager keyfile(s) by re-applying the site network`
          : `remove ${temporary.length} temporary NetworkManager file(s) a power cut left; the node already runs the site network`;
    return { action: 'change', summary, changes, decision };
  },

  async apply(ctx, decision) {
    await removeLeftovers(ctx, decision.leftovers);
    // only leftovers to clear: the network itself already holds, so nothing is re-applied
    if (!decision.apply) {
      await flushToDisk(ctx);
      return;
    }
    const { desired, revert, checks } = decision.apply;
    const { timeoutSeconds } = checks;
    const revertState = await saveRevertState(ctx, desired, revert);

    let checkpoint: string;
    try {
      ({ checkpoint } = await ctx.nmstate.apply(desired, {
        timeoutSeconds: timeoutSeconds + CHECKPOINT_MARGIN_SECONDS,
      }));
    } catch (err) {
      // either backend undoes a change it could not make (nmstatectl itself, the D-Bus backend at once)
      const reason = `applying the site network failed: ${errorMessage(err)}`;
      logEvent(
        ctx.log,
        'error',
        'networkRollback',
        { reason, revertState },
        `network change refused; the previous network is restored: ${reason}`,
      );
      throw new StepError(`network: ${reason} (the previous network is restored)`, {
        step: 'network',
        cause: err,
        retryable: true,
      });
    }
    ctx.log.info({ checkpoint }, `site network applied under checkpoint ${checkpoint}; checking it`);
    await ctx.run?.hold?.('network:checkpoint');

    const failed = await checkWithRetries(ctx, checks);
    if (failed.length > 0) {
      const reason = failed.join('; ');
      let rollback = 'rolled back to the previous network';
      try {
        await ctx.nmstate.rollback(checkpoint);
      } catch (err) {
        rollback = `rollback failed (${errorMessage(err)}); NetworkManager rolls back by itself when the checkpoint times out`;
      }
      logEvent(
        ctx.log,
        'error',
        'networkRollback',
        { checkpoint, reason, revertState },
        `network checks failed after ${timeoutSeconds} s, ${rollback}: ${reason}`,
      );
      throw new RolledBackError(`network: checks failed after ${timeoutSeconds} s (${reason}); ${rollback}`, {
        step: 'network',
        retryable: true,
      });
    }

    try {
      await ctx.nmstate.commit(checkpoint);
    } catch (err) {
      throw new StepError(`network: commit of ${checkpoint} failed: ${errorMessage(err)}`, {
        step: 'network',
        cause: err,
        retryable: true,
      });
    }
    await flushToDisk(ctx);
    ctx.log.info({ checkpoint }, 'site network committed and flushed to disk');
  },

  // its own: the site's checks (the gateway answers, the names resolve) must hold after the commit
  // too, which the node's state alone does not show
  async verify(ctx) {
    const { empty } = await keyfileLeftovers(ctx);
    const internal = await internalIPs(ctx);
    const desired = desiredNetworkState(ctx.site.network.nmstate, internal);
    const failed = [
      ...empty.map((f) => `${f} is empty`),
      ...(await checkWithRetries(ctx, {
        ...ctx.site.network.verify,
        desired,
        internalIPs: internal,
        internalRequired: [],
      })),
    ];
    if (failed.length === 0) return;
    // past the commit there is no checkpoint to roll back to: say where the previous state is kept
    const revert = path.posix.join(ctx.stateDir, REVERT_STATE_FILE);
    const hint = (await ctx.fs.exists(revert))
      ? `; the network state from before the change is in ${ctx.fs.resolve(revert)}`
      : '';
    throw new VerificationError(`network: ${failed.join('; ')}${hint}`, { step: 'network', retryable: true });
  },
};
