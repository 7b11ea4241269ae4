/**
 * Faults in the cluster phase: kube-apiserver restarting (and crashing) while the steps run,
 * kube-apiserver stopped (SIGSTOP: connections accepted, nothing answered) under a call and under
 * the readiness wait, and another writer racing the agent on apiserver.config and ingress.config.
 */
import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StepError } from '../../src/base/errors.js';
import { connectKube, createKube } from '../../src/kube/client.js';
import { FACTORY_APPS_DOMAIN, FOREIGN_CERT_NAMES, FOREIGN_CERT_SECRET } from '../kube/factory-cluster.js';
import { agent, memoryLogger, startFactory, storeSite, type ClusterEnv, type LogEntry } from './env.js';

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

describe.skipIf(kubeSkipped)('cluster phase under faults', () => {
  let env: ClusterEnv;
  let kc: KubeConfig;
  beforeAll(async () => {
    env = await startFactory({ seed: { extraRoutes: 300 } });
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

  /** Runs `fn` with kube-apiserver stopped (SIGSTOP); `resume` continues it early, the finally always does. */
  const whileApiStopped = async <T>(fn: (resume: () => void) => Promise<T>): Promise<T> => {
    const pid = env.cluster.pids().apiServer;
    if (pid === undefined) throw new Error('kube-apiserver is not running');
    let stopped = true;
    const resume = () => {
      if (stopped) process.kill(pid, 'SIGCONT');
      stopped = false;
    };
    process.kill(pid, 'SIGSTOP');
    try {
      return await fn(resume);
    } finally {
      resume();
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
        'failed to read Namespace default: no answer from the API within 0.5 s (GET /api/v1/namespaces/default)',
      );
      expect((read as StepError).retryable).toBe(true);
      // the attempts fit the retry budget plus one request bound, with room for a slow machine
      expect(performance.now() - started).toBeLessThan(10_000);
      // an API version not discovered yet fails at discovery, and says so
      const discovery = await outcome(
        kube.get({ apiVersion: 'config.openshift.io/v1', kind: 'Ingress', name: 'cluster' }),
      );
      expect((discovery as Error).message).toMatch(
        /^failed to discover config\.openshift\.io\/v1: no answer from the API within 0\.5 s/,
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
      env.models!.kubeApiServer.restarts = true;
      await writing;
    }
    expect(conflicts).toBeGreaterThan(0);
    const last = `race${runs - 1}.example.com`;
    const a = await apiserver();
    const g = await ingress();
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
