/** Wires the real adapters behind the ports together for one command, from its flags. */
import path from 'node:path';
import { discoverSiteConfig } from '../config/discover.js';
import { type Admission, admitSite } from '../config/admit.js';
import type { LoadedSite } from '../config/site.js';
import { type Banner, createBanner } from '../engine/banner.js';
import { ConfigError, StepError } from '../base/errors.js';
import type { RunOptions } from '../engine/step.js';
import type { StepContext } from '../steps/step.js';
import { hashOf } from '../engine/state.js';
import { createLogger, logEvent, type Logger } from '../log/logger.js';
import { scrubText } from '../log/redact.js';
import { type Clock, systemClock } from '../ports/clock.js';
import { createExec, type Exec } from '../ports/exec.js';
import { createRootFs, type RootFs } from '../ports/fs.js';
import type { Kube } from '../ports/kube.js';
import { selectNmstate } from '../ports/select-nmstate.js';
import type { Systemd } from '../ports/systemd.js';
import { connectSystemdBus } from '../ports/systemd-dbus.js';
import { checkTrust } from '../trust/check.js';
import { checkSiteAgainstRecord } from '../node/factory-record.js';
import { checkProvenTime } from '../node/proven-time.js';
import { nodeUnsealer } from '../trust/node-key.js';
import { defersTime, type TimeMark } from '../base/true-time.js';
import { chronySyncState } from '../node/chrony.js';
import { readShipment } from '../node/shipment.js';
import { BUILT_AT } from './build-info.js';
import { type Flags, oneOf } from './args.js';

/** The kubeconfig every OpenShift node carries for its own API server on localhost. */
export const NODE_KUBECONFIG =
  '/etc/kubernetes/static-pod-resources/kube-apiserver-certs/secrets/node-kubeconfigs/localhost.kubeconfig';

/** What the command line says about where things are, as typed values, read once from the flags. */
export interface RuntimeOptions {
  /** seconds to wait for a site-config to appear when none is named (--wait) */
  waitSeconds?: number;
  /** the cluster's kubeconfig named on the command line (--kubeconfig), made absolute */
  kubeconfig?: string;
  /** where the watcher serves its metrics (--metrics-address) */
  metricsAddress: string;
}

export interface Runtime {
  log: Logger;
  fs: RootFs;
  exec: Exec;
  clock: Clock;
  banner: Banner;
  stateDir: string;
  options: RuntimeOptions;
}

/** the options that say where things are and how to log; a command that takes none of them passes `{}` */
type RuntimeFlags = Partial<
  Pick<Flags, 'root' | 'state-dir' | 'kubeconfig' | 'log-level' | 'log-format' | 'console' | 'wait' | 'metrics-address'>
>;

function runtimeOptions(flags: RuntimeFlags): RuntimeOptions {
  return {
    ...(flags.wait !== undefined && { waitSeconds: flags.wait }),
    ...(flags.kubeconfig && { kubeconfig: path.resolve(flags.kubeconfig) }),
    metricsAddress: flags['metrics-address'] ?? '127.0.0.1:9464',
  };
}

export function createRuntime(flags: RuntimeFlags): Runtime {
  const log = createLogger({
    level: oneOf('--log-level', flags['log-level'], ['trace', 'debug', 'info', 'warn', 'error'] as const, 'info'),
    format: oneOf('--log-format', flags['log-format'], ['text', 'json'] as const, 'text'),
  });
  const fs = createRootFs(flags.root ?? '/');
  const underSystemd = process.env.INVOCATION_ID !== undefined;
  return {
    log,
    fs,
    exec: createExec(log),
    clock: systemClock,
    banner: createBanner(flags.console ?? (underSystemd ? '/dev/console' : undefined)),
    stateDir: flags['state-dir'] ?? '/var/lib/sno-relocate',
    options: runtimeOptions(flags),
  };
}

/** What says the true time is at least some instant, before the site-config is read: the seal, the build. */
async function timeMarks(rt: Runtime): Promise<TimeMark[]> {
  const shipment = await readShipment(rt.fs, rt.stateDir).catch(() => undefined);
  return [
    ...(shipment ? [{ what: 'factory seal', at: new Date(shipment.shippedAt) }] : []),
    ...(BUILT_AT ? [{ what: 'agent build', at: BUILT_AT }] : []),
  ];
}

/** Secrets sealed to this node's key are opened with it, where the node has one. */
async function nodeUnsealerOf(rt: Runtime): Promise<Pick<Admission, 'unseal'>> {
  const unseal = await nodeUnsealer(rt);
  return unseal ? { unseal } : {};
}

/** The node's rules a site-config is admitted under; admitSite decides their order. */
async function admission(rt: Runtime): Promise<Admission> {
  // on a clock chronyd has yet to synchronise, time is judged by the clock step (src/base/true-time.ts)
  const deferTime = defersTime(await chronySyncState(rt.fs, rt.exec));
  const now = rt.clock.now();
  return {
    now,
    deferTime,
    timeMarks: await timeMarks(rt),
    trust: (loaded) => checkTrust(rt, loaded, deferTime),
    // what the seal, the build or the signing time already proves expired is refused before any change
    provenTime: (loaded) => checkProvenTime(rt, loaded, now, !deferTime),
    // a node prepared at the factory keeps its install subnet for the internal IP
    factoryRecord: (loaded) => checkSiteAgainstRecord(rt.fs, loaded.site),
    ...(await nodeUnsealerOf(rt)),
  };
}

/** Admits the site-config named on the command line, or discovers it. Undefined: none appeared in time. */
export async function loadSite(rt: Runtime, target: string | undefined): Promise<LoadedSite | undefined> {
  if (target !== undefined) return report(rt, async () => admitSite(target, await admission(rt)));
  const found = await discoverUntilStopped(rt);
  if (!found) return undefined;
  logEvent(rt.log, 'info', 'configFound', { path: found.path }, `site-config found at ${found.path}`);
  try {
    return await report(rt, async () => admitSite(found.path, await admission(rt)));
  } finally {
    await found.release();
  }
}

/**
 * Discovery, ended early by SIGTERM or SIGINT (systemd stopping the unit, a shutdown): the wait
 * changed nothing, so it ends as a run that found no site-config rather than a killed process.
 */
async function discoverUntilStopped(rt: Runtime) {
  const stop = new AbortController();
  const onSignal = (signal: NodeJS.Signals) => stop.abort(signal);
  process.once('SIGTERM', onSignal).once('SIGINT', onSignal);
  try {
    const found = await discoverSiteConfig({ ...rt, waitSeconds: rt.options.waitSeconds ?? 0, signal: stop.signal });
    if (!found && stop.signal.aborted)
      rt.log.info(
        { signal: stop.signal.reason as string },
        `stopped while waiting for a site-config (${stop.signal.reason as string})`,
      );
    return found;
  } finally {
    process.off('SIGTERM', onSignal).off('SIGINT', onSignal);
  }
}

/** Renders what the admission found: its warnings, or why the site-config is invalid. */
async function report(rt: Runtime, admit: () => Promise<LoadedSite>): Promise<LoadedSite> {
  try {
    const loaded = await admit();
    for (const f of loaded.findings) rt.log.warn({ path: f.path }, `site-config: ${f.path}: ${f.message}`);
    return loaded;
  } catch (err) {
    if (err instanceof ConfigError) {
      for (const f of err.findings)
        rt.log[f.severity === 'error' ? 'error' : 'warn']({ path: f.path }, `site-config: ${f.path}: ${f.message}`);
      const errors = err.findings.filter((f) => f.severity === 'error');
      logEvent(
        rt.log,
        'error',
        'configInvalid',
        { errors: errors.length },
        'site-config is invalid; nothing on the host was changed',
      );
      const first = errors[0];
      await rt.banner.show(
        `site-config invalid${first ? ` (${first.path}: ${scrubText(first.message)}${errors.length > 1 ? `, and ${errors.length - 1} more` : ''})` : ''}; nothing was changed`,
      );
    }
    throw err;
  }
}

/**
 * The cluster's kubeconfig, one rule for every command: --kubeconfig, else the node's own, else
 * $KUBECONFIG. None at all is a failed step (exit 1), as a missing or unreadable file is.
 */
export async function kubeconfigPath(rt: Runtime): Promise<string> {
  if (rt.options.kubeconfig) return rt.options.kubeconfig;
  if (await rt.fs.exists(NODE_KUBECONFIG)) return rt.fs.resolve(NODE_KUBECONFIG);
  if (process.env.KUBECONFIG) return process.env.KUBECONFIG;
  throw new StepError(
    `no kubeconfig: ${rt.fs.resolve(NODE_KUBECONFIG)} is missing, and neither --kubeconfig nor $KUBECONFIG is set`,
  );
}

/** The client library is loaded on first use: `--version` and the node-only commands never pay for it. */
async function connectKube(rt: Runtime, options: { readyTimeoutMs?: number }): Promise<Kube> {
  const file = await kubeconfigPath(rt);
  const client = await import('../kube/client.js');
  return client.connectKube(file, rt.log, options);
}

function lazy<T>(make: () => Promise<T>): () => Promise<T> {
  let value: Promise<T> | undefined;
  return () => (value ??= make());
}

export interface StepContextHandle {
  ctx: StepContext;
  close(): void;
}

/** `kubeReadyTimeoutMs`: how long to wait for the API; `run` waits for kubelet to bring it up, `plan` does not. */
export function createStepContext(
  rt: Runtime,
  loaded: LoadedSite,
  options: RunOptions,
  connect: { kubeReadyTimeoutMs?: number } = {},
): StepContextHandle {
  const systemd = lazy<Systemd>(() => connectSystemdBus(rt.log));
  const kube = lazy<Kube>(() => connectKube(rt, { readyTimeoutMs: connect.kubeReadyTimeoutMs }));
  let systemdUsed = false;
  return {
    ctx: {
      site: loaded.site,
      fs: rt.fs,
      exec: rt.exec,
      systemd: () => {
        systemdUsed = true;
        return systemd();
      },
      nmstate: selectNmstate(rt.exec, rt.log),
      kube,
      clock: rt.clock,
      log: rt.log,
      stateDir: rt.stateDir,
      configHash: hashOf(loaded.files),
      options,
      facts: { admission: { deferred: loaded.deferred ?? [], timeMarks: loaded.timeMarks ?? [] } },
      console: (line) => rt.banner.show(line),
    },
    close: () => {
      if (systemdUsed)
        void systemd().then(
          (s) => s.close(),
          () => undefined,
        );
    },
  };
}
