/**
 * What the node step tests share: a temporary root laid out as a factory node, a step context on
 * it with the real ports (filesystem, exec, D-Bus when a bus is given, the nmstatectl stub on PATH),
 * a logger whose lines the test can read, and a clock whose waits pass at once.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Site } from '../../src/config/site.js';
import type { NmstateState } from '../../src/base/nmstate.js';
import { runSteps } from '../../src/engine/engine.js';
import { createBanner } from '../../src/engine/banner.js';
import { StateStore } from '../../src/engine/state.js';
import type { StepName } from '../../src/engine/step.js';
import type { AnyStep, StepContext } from '../../src/steps/step.js';
import { createLogger } from '../../src/log/logger.js';
import type { Clock } from '../../src/ports/clock.js';
import { createExec, type Exec } from '../../src/ports/exec.js';
import { createRootFs } from '../../src/ports/fs.js';
import { createNmstatectl } from '../../src/ports/nmstatectl.js';
import type { Systemd } from '../../src/ports/systemd.js';
import { connectSystemdBus } from '../../src/ports/systemd-dbus.js';
import { layFactoryNode } from '../fixtures/factory-node.js';
import { noteLogLine } from '../helpers/error-log.js';

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const STUBS = path.join(REPO, 'test/stubs');
export const STATE_DIR = '/var/lib/sno-relocate';

/** Environment that puts the nmstatectl stub on PATH, with its state in `stateFile`, writing keyfiles under `root`. */
export function stubEnvironment(
  root: string,
  stateFile = path.join(root, '.nmstatectl-stub.json'),
): Record<string, string> {
  return {
    PATH: `${STUBS}${path.delimiter}${process.env.PATH ?? ''}`,
    NMSTATECTL_STUB_STATE: stateFile,
    NMSTATECTL_STUB_ROOT: root,
  };
}

/** A site as the loader would produce it, with the given parts. */
export function testSite(parts: Partial<Omit<Site, 'network'>> & { network?: Partial<Site['network']> } = {}): Site {
  const { network, ...rest } = parts;
  return {
    name: 'store-test',
    baseDomain: 'store.example.com',
    pullSecretPolicy: 'replace',
    imageDigestMirrors: [],
    imageTagMirrors: [],
    certificates: {},
    sshAuthorizedKeys: [],
    extraManifests: [],
    nodeLabels: {},
    // the tests' sites name registries nobody serves: test/registry checks them against a real one
    registryCheck: 'skip',
    ...rest,
    network: {
      nmstate: { interfaces: [] },
      machineNetworks: [],
      verify: { pingGateway: false, resolve: [], timeoutSeconds: 5 },
      ...network,
    },
  };
}

/** Waits pass at once and move the monotonic time on, so bounded retries run out without real waiting. */
export function instantClock(): Clock {
  let now = 0;
  return {
    now: () => new Date(Date.UTC(2026, 0, 1) + now),
    monotonic: () => now,
    sleep: async (ms) => {
      now += ms;
    },
  };
}

function withEnv(exec: Exec, env: Record<string, string>): Exec {
  return {
    run: (command, args, options = {}) => exec.run(command, args, { ...options, env: { ...env, ...options.env } }),
  };
}

export interface TestNode {
  root: string;
  ctx: StepContext;
  /** the log lines written so far (JSON) */
  logs: string[];
  env: Record<string, string>;
  /** runs steps through the real engine, as `run` does */
  run(steps: readonly AnyStep[], selected?: Iterable<StepName>): ReturnType<typeof runSteps>;
  close(): void;
}

export interface TestNodeOptions {
  site?: Site;
  /** the stub's network before the test (default: its loopback-only state) */
  network?: NmstateState;
  /** connect the systemd port to this bus (DBUS_SYSTEM_BUS_ADDRESS must point at it) */
  systemd?: boolean;
  clock?: Clock;
  env?: Record<string, string>;
  factory?: boolean;
}

export function testNode(options: TestNodeOptions = {}): TestNode {
  const root = mkdtempSync(path.join(tmpdir(), 'node-steps-'));
  if (options.factory ?? true) layFactoryNode(root);
  const env = { ...stubEnvironment(root), ...options.env };
  if (options.network) writeFileSync(env.NMSTATECTL_STUB_STATE!, JSON.stringify({ current: options.network }));
  const logs: string[] = [];
  const log = createLogger({
    format: 'json',
    level: 'debug',
    journal: false,
    write: (l) => {
      logs.push(l);
      noteLogLine(l);
    },
  });
  const exec = withEnv(createExec(log), env);
  let systemd: Promise<Systemd> | undefined;
  const clock = options.clock ?? instantClock();
  const ctx: StepContext = {
    site: options.site ?? testSite(),
    fs: createRootFs(root),
    exec,
    systemd: () => {
      if (!options.systemd) throw new Error('this test gave the step no D-Bus');
      return (systemd ??= connectSystemdBus(log));
    },
    nmstate: createNmstatectl(exec, log, clock),
    kube: () => Promise.reject(new Error('node steps do not use the cluster')),
    clock,
    log,
    stateDir: STATE_DIR,
    configHash: 'test',
    options: { healthTimeoutSeconds: 1, healthStableSeconds: 0 },
  };
  const store = new StateStore(ctx.fs, STATE_DIR);
  return {
    root,
    ctx,
    logs,
    env,
    run: (steps, selected = steps.map((s) => s.name)) =>
      runSteps({ steps, selected: new Set(selected), ctx, store, banner: createBanner(undefined), configHash: 'test' }),
    close: () =>
      void systemd?.then(
        (s) => s.close(),
        () => undefined,
      ),
  };
}
