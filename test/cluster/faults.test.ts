/**
 * Faults in the cluster phase: kube-apiserver restarting (and crashing) while the steps run,
 * kube-apiserver stopped (SIGSTOP: connections accepted, nothing answered) under a call and under
 * the readiness wait, and another writer racing the agent on apiserver.config and ingress.config.
 *
 * Its API servers are its own, not the worker's shared one (test/kube/pool.ts): it stops the
 * process by signal and reads its threads' state by pid, which only the process's parent can do.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StepError } from '../../src/base/errors.js';
import { connectKube, createKube } from '../../src/kube/client.js';
import { FACTORY_APPS_DOMAIN, FOREIGN_CERT_NAMES, FOREIGN_CERT_SECRET } from '../kube/factory-cluster.js';
import { StateStore } from '../../src/engine/state.js';
import { createListWatch } from '../../src/kube/list-watch.js';
import { systemClock } from '../../src/ports/clock.js';
import { EMPTY_CONTEXT } from '../../src/watch/model.js';
import { ClusterView } from '../../src/watch/view.js';
import { agent, memoryLogger, startFactory, STATE_DIR, storeSite, type ClusterEnv, type LogEntry } from './env.js';

const PRIVATE = 'stops kube-apiserver by signal and waits on its threads by pid';
const cfg = { group: 'config.openshift.io', version: 'v1' };
type Ingress = {
  metadata: { resourceVersion: string };
  spec: { appsDomain?: string; componentRoutes?: { namespace: string; name: string; hostname: string }[] };
};
type APIServer = {
  metadata: { resourceVersion: string };
  spec: {
    additionalCORSAllowedOrigins?: string[];
    servingCerts?: { namedCertificates?: { names?: string[]; servingCertificate: { name: string } }[] };
  };
};

const kubeSkipped = process.env.SNO_RELOCATE_SKIP_KUBE === '1';
const statusOf = (err: unknown) => (err as { code?: number }).code;

/** A debug log kept in memory, and a promise for the first line that matches. */
function recordingLog() {
  const waiters: { pattern: RegExp; resolve: () => void }[] = [];
  const { log, lines } = memoryLogger((line) => {
    for (const w of waiters.filter((x) => x.pattern.test(line))) {
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve();
    }
  });
  const logged = (pattern: RegExp) =>
    lines.some((l) => pattern.test(l))
      ? Promise.resolve()
      : new Promise<void>((resolve) => waiters.push({ pattern, resolve }));
  return { log, lines, logged };
}

/**
 * Sends SIGSTOP and resolves once every thread of the process has stopped. kill(2) returns before
 * they have: measured here, kube-apiserver's threads went on running for up to 26 ms after it, long
 * enough to answer a request sent meanwhile.
 */
async function stopProcess(pid: number, timeoutMs = 5_000): Promise<void> {
  process.kill(pid, 'SIGSTOP');
  const running = (tid: string) => {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    } catch {
      return false; // the thread has exited
    }
    // the state follows the command name, which may hold spaces and parentheses
    return !['T', 't'].includes(stat[stat.lastIndexOf(')') + 2] ?? '');
  };
  const deadline = performance.now() + timeoutMs;
  while (readdirSync(`/proc/${pid}/task`).some(running)) {
    if (performance.now() > deadline) throw new Error(`process ${pid} has not stopped ${timeoutMs} ms after SIGSTOP`);
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

describe.skipIf(kubeSkipped)('cluster phase under faults', () => {
  let env: ClusterEnv;
  let kc: KubeConfig;
  beforeAll(async () => {
    env = await startFactory({ seed: { extraRoutes: 300 }, private: PRIVATE });
    kc = env.cluster.kubeConfig();
  });
  afterAll(async () => {
    await env?.stop();
  });
  const custom = () => kc.makeApiClient(CustomObjectsApi);
  const ingress = async () =>
    (await custom().getClusterCustomObject({ ...cfg, plural: 'ingresses', name: 'cluster' })) as Ingress;
  const apiserver = async () =>
    (await custom().getClusterCustomObject({ ...cfg, plural: 'apiservers', name: 'cluster' })) as APIServer;
  const routeHosts = async () =>
    (
      (await custom().listClusterCustomObject({ group: 'route.openshift.io', version: 'v1', plural: 'routes' })) as {
        items: { spec: { host: string } }[];
      }
    ).items.flatMap((r) => (r.spec.host ? [r.spec.host] : []));

  it('completes, or resumes on the next run, when kube-apiserver crashes during domain and restarts during routes: nothing lost or doubled', async () => {
    const restarts: Promise<void>[] = [];
    const site = storeSite();
    // each fault once, in whichever run reaches its step: a resumed run that starts a step the
    // first never reached still meets that step's fault
    const faulted = new Set<string>();
    const faults = (entry: LogEntry) => {
      if (entry.event !== 'stepStarted' || !entry.step || faulted.has(entry.step)) return;
      if (entry.step === 'domain') restarts.push(env.cluster.restartApiServer({ signal: 'SIGKILL', downMs: 1_000 }));
      else if (entry.step === 'routes') restarts.push(env.cluster.restartApiServer({ downMs: 500 }));
      else return;
      faulted.add(entry.step);
    };
    const a = await agent(env, site, undefined, faults);
    const logs = [a.logs];
    let result: string;
    try {
      result = (await a.run()).result;
    } catch {
      // a step may run out of patience while the API is down; the next boot runs again and resumes
      await Promise.all(restarts);
      const resumed = await agent(env, site, a.root, faults);
      logs.push(resumed.logs);
      result = (await resumed.run()).result;
    }
    await Promise.all(restarts);
    // and the kube-apiserver's own revisions are installed (their restarts over) before it is read
    await env.models!.settled();
    expect(restarts.length).toBe(2);
    expect(result).toBe('succeeded');
    // the API really went away under the agent, and the agent rode it out with retries
    expect(logs.flat().join('\n')).toMatch(/transient failure, retrying/);

    const hosts = await routeHosts();
    // only the routes their operators keep on the factory domain (console, downloads)
    expect(hosts.filter((h) => h.endsWith(`.${FACTORY_APPS_DOMAIN}`)).sort()).toEqual([
      `console-openshift-console.${FACTORY_APPS_DOMAIN}`,
      `downloads-openshift-console.${FACTORY_APPS_DOMAIN}`,
    ]);
    // the agent's, and the operators' (console-custom, downloads-custom, oauth-openshift)
    expect(hosts.filter((h) => h.endsWith('.apps.sno.store42.example.com')).length).toBe(
      env.factory.oldDomainRoutes.filter((r) => !r.owner).length + 3,
    );
    expect((await apiserver()).spec.servingCerts?.namedCertificates).toEqual([
      { names: FOREIGN_CERT_NAMES, servingCertificate: { name: FOREIGN_CERT_SECRET } },
      { names: ['api.sno.store42.example.com'], servingCertificate: { name: 'sno-relocate-api' } },
    ]);
    expect((await ingress()).spec.componentRoutes?.map((r) => r.name)).toEqual([
      'console',
      'downloads',
      'oauth-openshift',
    ]);
    // the kube-apiserver's own revisions restart it too, on top of the two restarts here
  }, 300_000);

  /**
   * Runs `fn` with kube-apiserver stopped (SIGSTOP); `resume` continues it early, the finally always
   * does. The operator models' revisions are installed first and restart nothing meanwhile: the
   * process stopped must be the one that answers.
   */
  const whileApiStopped = async <T>(fn: (resume: () => void) => Promise<T>): Promise<T> => {
    await env.models!.settled();
    env.models!.kubeApiServer.restarts = false;
    const pid = env.cluster.pids().apiServer;
    if (pid === undefined) throw new Error('kube-apiserver is not running');
    let stopped = true;
    const resume = () => {
      if (stopped) process.kill(pid, 'SIGCONT');
      stopped = false;
    };
    try {
      await stopProcess(pid);
      return await fn(resume);
    } finally {
      resume();
      env.models!.kubeApiServer.restarts = true;
    }
  };
  const defaultNamespace = { apiVersion: 'v1', kind: 'Namespace', name: 'default' };
  const outcome = (p: Promise<unknown>) =>
    p.then(
      () => undefined,
      (err: unknown) => err,
    );

  it('fails a call within its bound, naming the operation, when kube-apiserver stops answering (SIGSTOP)', async () => {
    const { log, lines } = recordingLog();
    const kube = createKube(kc, log, {
      requestTimeoutMs: 500,
      retry: { budgetMs: 1_500, firstDelayMs: 100, maxDelayMs: 400 },
    });
    // discovery of v1 done and a keep-alive connection open: the read below is sent on it and hangs there
    expect((await kube.get(defaultNamespace))?.metadata.name).toBe('default');
    await whileApiStopped(async () => {
      const started = performance.now();
      const read = await outcome(kube.get(defaultNamespace));
      expect(read).toBeInstanceOf(StepError);
      expect((read as StepError).message).toBe(
        'failed to read Namespace default: the API was away longer than the outage budget of 1.5 s: no answer from the API within 0.5 s (GET /api/v1/namespaces/default)',
      );
      expect((read as StepError).retryable).toBe(true);
      // the attempts fit the retry budget plus one request bound, with room for a slow machine
      expect(performance.now() - started).toBeLessThan(10_000);
      // an API version not discovered yet fails at discovery, and says so
      const discovery = await outcome(
        kube.get({ apiVersion: 'config.openshift.io/v1', kind: 'Ingress', name: 'cluster' }),
      );
      expect((discovery as Error).message).toMatch(
        /^failed to read Ingress cluster: the API was away longer than the outage budget of 1\.5 s: cannot discover config\.openshift\.io\/v1: no answer from the API within 0\.5 s/,
      );
    });
    expect(
      lines.filter((l) => l.includes('transient failure, retrying') && l.includes('no answer from the API')).length,
    ).toBeGreaterThan(1);
    // and once it answers again, the same client goes on
    expect((await kube.get(defaultNamespace))?.metadata.name).toBe('default');
  });

  it('waits for a stopped kube-apiserver (readiness probe and a call), and goes on once it continues (SIGCONT)', async () => {
    const { log, lines, logged } = recordingLog();
    const kube = await whileApiStopped(async (resume) => {
      const connecting = connectKube(env.cluster.kubeconfigPath, log, {
        readyTimeoutMs: 30_000,
        probeTimeoutMs: 300,
        requestTimeoutMs: 500,
      });
      // each probe is bounded: the wait goes on, and says why
      await logged(
        /^(?=.*the API is not answering yet)(?=.*no answer from the API within 0\.3 s \(GET \/api\/v1\/namespaces\))/,
      );
      resume();
      return connecting;
    });
    expect(lines.join('\n')).toMatch(/waiting for the API/);
    expect((await kube.get(defaultNamespace))?.metadata.name).toBe('default');
    await whileApiStopped(async (resume) => {
      const reading = kube.get(defaultNamespace);
      // a request that ran out of time is retried with backoff, like a refused connection
      await logged(
        /^(?=.*read Namespace default: transient failure, retrying)(?=.*no answer from the API within 0\.5 s)/,
      );
      resume();
      expect((await reading)?.metadata.name).toBe('default');
    });
  });

  it('keeps both writes when another writer races the agent on apiserver.config and ingress.config (409 Conflict)', async () => {
    const written = { origins: [] as string[], routes: [] as string[] };
    let stop = false;
    /** another operator: read, add one entry of its own, replace with the read resourceVersion */
    const writer = async () => {
      for (let i = 0; !stop; i++) {
        try {
          const a = await apiserver();
          const origin = `^https://writer-${i}\\.example\\.net$`;
          a.spec.additionalCORSAllowedOrigins = [...(a.spec.additionalCORSAllowedOrigins ?? []), origin];
          await custom().replaceClusterCustomObject({ ...cfg, plural: 'apiservers', name: 'cluster', body: a });
          written.origins.push(origin);
          const g = await ingress();
          const name = `writer-${i}`;
          g.spec.componentRoutes = [
            ...(g.spec.componentRoutes ?? []),
            { namespace: 'store-tools', name, hostname: `${name}.store.example.net` },
          ];
          await custom().replaceClusterCustomObject({ ...cfg, plural: 'ingresses', name: 'cluster', body: g });
          written.routes.push(name);
        } catch (err) {
          // the writer lost a race against the agent, or the kube-apiserver is restarting on a new
          // revision: it tries again, as a controller would
          if (statusOf(err) !== 409 && !/ECONNREFUSED|ECONNRESET|socket hang up/.test(String(err))) throw err;
        }
      }
    };
    let conflicts = 0;
    let runs = 0;
    // the race is the subject here, not outages: the kube-apiserver's revisions install without a restart
    env.models!.kubeApiServer.restarts = false;
    const writing = writer();
    try {
      // each run moves to another domain, so each changes both objects; repeated until the agent met a 409
      // (the race is the writer's and the scheduler's: on a loaded machine it can take a few dozen runs)
      for (; runs < 40 && conflicts === 0; runs++) {
        const a = await agent(env, storeSite({ baseDomain: `race${runs}.example.com` }));
        expect((await a.run(['domain'])).result).toBe('succeeded');
        conflicts += a.logs.filter((l) => l.includes('changed while it was being updated')).length;
      }
    } finally {
      stop = true;
      await writing;
    }
    expect(conflicts).toBeGreaterThan(0);
    const last = `race${runs - 1}.example.com`;
    // read before the model may restart the API server on the revisions the runs left
    const a = await apiserver();
    const g = await ingress();
    env.models!.kubeApiServer.restarts = true;
    // the writer's every write survived
    expect(a.spec.additionalCORSAllowedOrigins).toEqual(expect.arrayContaining(written.origins));
    expect(g.spec.componentRoutes?.map((r) => r.name)).toEqual(expect.arrayContaining(written.routes));
    // and so did the agent's, exactly once
    expect(a.spec.servingCerts?.namedCertificates).toEqual([
      { names: FOREIGN_CERT_NAMES, servingCertificate: { name: FOREIGN_CERT_SECRET } },
      { names: [`api.sno.${last}`], servingCertificate: { name: 'sno-relocate-api' } },
    ]);
    expect(g.spec.appsDomain).toBe(`apps.sno.${last}`);
    expect(g.spec.componentRoutes?.filter((r) => r.namespace !== 'store-tools')).toEqual([
      expect.objectContaining({ name: 'console', hostname: `console-openshift-console.apps.sno.${last}` }),
      expect.objectContaining({ name: 'downloads', hostname: `downloads-openshift-console.apps.sno.${last}` }),
      expect.objectContaining({ name: 'oauth-openshift', hostname: `oauth-openshift.apps.sno.${last}` }),
    ]);
  }, 300_000);
});

/**
 * Outages as the move itself causes them, each at a random point of the routes and domain steps,
 * found by following the run's log: kube-apiserver stopped (restarted after the outage, so the
 * aggregator's 404 window follows), the aggregated server of route.openshift.io stopped (the
 * aggregator answers 503), both at once, and one longer than the run's outage budget. Each
 * scenario has a cluster of its own, and they run side by side.
 */
type Step = 'routes' | 'domain';
interface Scenario {
  /** where the fault may land */
  steps: Step[];
  /** kube-apiserver stopped this long */
  apiDownS?: number;
  /** the aggregated route server stopped this long */
  routesDownS?: number;
  /** the run's outage budget, when the outage is to outlast it */
  budgetS?: number;
}
interface Point {
  step: Step;
  /** a line of the run's log in that step: the fault lands as it is written */
  matches(entry: LogEntry, seen: number): boolean;
  what: string;
}

const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)]!;

/** A random point of the step, as its log shows it. */
function pointIn(step: Step, routes: number): Point {
  if (step === 'routes') {
    const k = 1 + Math.floor(Math.random() * Math.max(1, Math.floor(routes / 2)));
    return { step, what: `after ${k} routes moved`, matches: (e, seen) => e.msg === 'route moved' && seen === k };
  }
  return pick<Point>([
    { step, what: 'as the domain step starts', matches: (e) => e.event === 'stepStarted' },
    // the plan's summary: the step's first line of its own, right before it applies
    { step, what: 'as the domain step applies its plan', matches: (e) => e.level === 30 && !e.event },
    { step, what: 'as the domain step writes its first secret', matches: (e) => / written$/.test(e.msg) },
  ]);
}

type Entry = LogEntry & { outageSeconds?: number };

describe.skipIf(kubeSkipped).concurrent('cluster phase through API outages', () => {
  const scenario = (s: Scenario) => async () => {
    const env = await startFactory({ aggregatedRoutes: true, seed: { extraRoutes: 100 }, private: PRIVATE });
    try {
      await rideOut(env, s);
    } finally {
      await env.stop();
    }
  };

  async function rideOut(env: ClusterEnv, s: Scenario): Promise<void> {
    const site = storeSite();
    const point = pointIn(pick(s.steps), env.factory.oldDomainRoutes.length);
    let current: string | undefined;
    let seen = 0;
    let injected: { step: string | undefined; at: number } | undefined;
    const faults: Promise<void>[] = [];
    const onLog = (e: LogEntry) => {
      if (e.event === 'stepStarted') current = e.step;
      if (injected || current !== point.step || e.step !== point.step) return;
      if (e.msg === 'route moved') seen += 1;
      if (!point.matches(e, seen)) return;
      injected = { step: current, at: performance.now() };
      if (s.apiDownS) faults.push(env.cluster.restartApiServer({ downMs: s.apiDownS * 1000 }));
      if (s.routesDownS) {
        const downMs = s.routesDownS * 1000;
        faults.push(
          env
            .routes!.stop()
            .then(() => new Promise<void>((resolve) => setTimeout(() => resolve(env.routes!.start()), downMs))),
        );
      }
    };
    // the health wait of a real run (10 minutes): the domain step's settle outlasts the outage
    const options = { healthTimeoutSeconds: 600 };
    const kubeOptions = s.budgetS
      ? { retry: { budgetMs: s.budgetS * 1000, firstDelayMs: 100, maxDelayMs: 5_000 } }
      : {};
    const watcher = s.apiDownS && !s.budgetS ? await watchDuring(env) : undefined;
    const a = await agent(env, site, undefined, onLog, options, kubeOptions);
    const first = await a.run().then(
      (state) => state,
      (err: unknown) => err as Error,
    );
    await Promise.all(faults);
    const where = `${point.what} (${JSON.stringify(s)})`;
    // the fault landed where the run was, and the run met it there
    expect(injected?.step, `fault ${where} never landed`).toBe(point.step);
    const entries = a.logs.map((l) => JSON.parse(l) as Entry);
    const journal = entries.filter((e) => e.level >= 30);
    expect(journal.filter((e) => e.msg.includes('transient failure'))).toEqual([]);
    const started = journal.filter((e) => e.event === 'apiOutageStarted');
    const ended = journal.filter((e) => e.event === 'apiOutageEnded');
    expect(started.length, where).toBeGreaterThan(0);
    expect(ended.length, where).toBe(started.length);

    if (s.budgetS) {
      // beyond the budget: exit 1 naming the operation, and the next run resumes
      expect(first).toBeInstanceOf(Error);
      expect((first as Error).message).toMatch(
        new RegExp(
          `^(${point.step}: )?failed to \\w+ .+: the API was away longer than the outage budget of ${s.budgetS} s: `,
        ),
      );
      const before = (await new StateStore(a.ctx.fs, STATE_DIR).load())?.steps ?? {};
      const done = Object.keys(before).filter((name) => before[name]!.status === 'done');
      const resumed = await agent(env, site, a.root, undefined, options);
      const state = await resumed.run();
      expect(state.result).toBe('succeeded');
      // what the first run finished is not done again
      for (const name of done) expect(state.steps[name]!.attempts, name).toBe(before[name]!.attempts);
      expect(done).not.toContain(point.step);
    } else {
      expect(first, where).not.toBeInstanceOf(Error);
      const state = first as Exclude<typeof first, Error>;
      expect(state.result, where).toBe('succeeded');
      // one run, no step recorded twice
      for (const [name, r] of Object.entries(state.steps)) expect(r.attempts, name).toBeLessThanOrEqual(1);
      // the outage injected is one outage in the journal, however many calls met it
      const downS = Math.max(s.apiDownS ?? 0, s.routesDownS ?? 0);
      expect(
        ended.some((e) => (e.outageSeconds ?? 0) >= downS - 2),
        where,
      ).toBe(true);
    }
    await env.models!.settled();
    await expectRelocated(env);
    await watcher?.expectOutagesLoggedOnce();
  }

  it('rides out kube-apiserver stopped for 30 s', scenario({ steps: ['routes', 'domain'], apiDownS: 30 }), 900_000);
  it('rides out kube-apiserver stopped for 120 s', scenario({ steps: ['routes', 'domain'], apiDownS: 120 }), 900_000);
  it('rides out kube-apiserver stopped for 300 s', scenario({ steps: ['routes', 'domain'], apiDownS: 300 }), 900_000);
  it(
    'rides out the aggregated route server stopped for 60 s',
    scenario({ steps: ['routes'], routesDownS: 60 }),
    900_000,
  );
  it('rides out both stopped at once', scenario({ steps: ['routes'], apiDownS: 60, routesDownS: 60 }), 900_000);
  it(
    'exits naming the call when the outage outlasts the budget, and the next run resumes',
    scenario({ steps: ['routes', 'domain'], apiDownS: 40, budgetS: 15 }),
    900_000,
  );
});

/** A watcher's view of the cluster while the run goes on: it meets the same outages. */
async function watchDuring(env: ClusterEnv) {
  const { log, lines } = memoryLogger();
  const view = new ClusterView(createListWatch(env.cluster.kubeConfig()), {
    clock: systemClock,
    log,
    ctx: EMPTY_CONTEXT,
  });
  view.start();
  await view.synced(120_000);
  const journal = () => lines.map((l) => JSON.parse(l) as LogEntry).filter((e) => e.level >= 30);
  const count = (event: string) => journal().filter((e) => e.event === event).length;
  return {
    async expectOutagesLoggedOnce() {
      // each informer lists again after its backoff (at most 30 s): every outage met ends, bounded
      const deadline = Date.now() + 120_000;
      while (count('apiOutageEnded') < count('apiOutageStarted') && Date.now() < deadline)
        await new Promise((resolve) => setTimeout(resolve, 500));
      await view.stop();
      expect(count('apiOutageStarted')).toBeGreaterThan(0);
      expect(count('apiOutageEnded')).toBe(count('apiOutageStarted'));
      // one warning an outage, not one a failed list or watch
      expect(journal().filter((e) => e.level >= 40).length).toBe(count('apiOutageStarted'));
    },
  };
}

/** The cluster relocated to the store's domain: routes, the API's named certificate, the component routes. */
async function expectRelocated(env: ClusterEnv): Promise<void> {
  const custom = env.cluster.kubeConfig().makeApiClient(CustomObjectsApi);
  const routes = (await custom.listClusterCustomObject({
    group: 'route.openshift.io',
    version: 'v1',
    plural: 'routes',
  })) as { items: { spec: { host: string } }[] };
  const hosts = routes.items.flatMap((r) => (r.spec.host ? [r.spec.host] : []));
  expect(hosts.filter((h) => h.endsWith(`.${FACTORY_APPS_DOMAIN}`)).sort()).toEqual([
    `console-openshift-console.${FACTORY_APPS_DOMAIN}`,
    `downloads-openshift-console.${FACTORY_APPS_DOMAIN}`,
  ]);
  expect(hosts.filter((h) => h.endsWith('.apps.sno.store42.example.com')).length).toBe(
    env.factory.oldDomainRoutes.filter((r) => !r.owner).length + 3,
  );
  const apiserver = (await custom.getClusterCustomObject({
    ...cfg,
    plural: 'apiservers',
    name: 'cluster',
  })) as APIServer;
  expect(apiserver.spec.servingCerts?.namedCertificates).toEqual([
    { names: FOREIGN_CERT_NAMES, servingCertificate: { name: FOREIGN_CERT_SECRET } },
    { names: ['api.sno.store42.example.com'], servingCertificate: { name: 'sno-relocate-api' } },
  ]);
}
