/**
 * The watcher against a real kube-apiserver holding a seeded factory cluster: what `watch --once`
 * reports and exits with, kinds whose CRD appears later, an API server restart, the long-running
 * watcher's journal lines, status file, metrics and SIGTERM, recording and replay, and the run's
 * health step.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { VerificationError } from '../../src/base/errors.js';
import { createListWatch } from '../../src/kube/list-watch.js';
import { createLogger } from '../../src/log/logger.js';
import { systemClock } from '../../src/ports/clock.js';
import { createRootFs } from '../../src/ports/fs.js';
import { healthStep } from '../../src/steps/health.js';
import { planOf, verifyStep } from '../../src/engine/engine.js';
import { contextFromSite, writeContextFile } from '../../src/watch/context.js';
import type { Finding, WatchContext } from '../../src/watch/model.js';
import { ClusterView } from '../../src/watch/view.js';
import { agent, startFactory, STATE_DIR, storeSite, type ClusterEnv } from '../cluster/env.js';
import { laySingleNodeDnsmasq } from '../fixtures/factory-node.js';
import { applyCrds } from '../kube/install.js';
import { FACTORY_REGISTRY } from '../kube/factory-cluster.js';
import { runAgent } from '../node/cli.js';
import { startWatch } from './process.js';
import { condition, GVR, healthyOperator, Scenario } from './scenario.js';

const kubeSkipped = process.env.SNO_RELOCATE_SKIP_KUBE === '1';
const SITE_CONTEXT: WatchContext = {
  siteRegistries: ['registry.store42.example.com:5000'],
  digestMirrorSources: ['quay.io/openshift-release-dev/ocp-release', 'registry.redhat.io/redhat'],
  tagMirrorSources: [],
  factoryRegistries: [FACTORY_REGISTRY],
};
const CATALOG = 'CatalogSource openshift-marketplace/redhat-operators';
const INDEX = 'registry.redhat.io/redhat/redhat-operator-index:v4.16';
const FORGED = 'etcd\u001b[2J\u001b[H\nsno-relocate: cluster healthy';
const quietLog = () => createLogger({ level: 'error', format: 'json', journal: false, write: () => undefined });
const brief = (findings: readonly Finding[]) => findings.map((f) => `${f.severity} ${f.object}: ${f.reason}`);

describe.skipIf(kubeSkipped)('watcher on a real API', () => {
  let env: ClusterEnv;
  let scenario: Scenario;
  let root: string;

  const once = (...args: string[]) =>
    runAgent(
      [
        'watch',
        '--once',
        '--kubeconfig',
        env.cluster.kubeconfigPath,
        '--root',
        root,
        '--state-dir',
        STATE_DIR,
        ...args,
      ],
      {},
    );
  const onceJson = () => {
    const r = once('-o', 'json');
    expect(r.stderr).not.toMatch(/ERROR/);
    return { code: r.code, ...(JSON.parse(r.stdout) as { health: string; findings: Finding[] }) };
  };
  const setOperator = (name: string, status: object) => scenario.setStatus(GVR.clusterOperator, name, status);

  beforeAll(async () => {
    // Cluster API, layering and HyperShift arrive later, as on a cluster where they are enabled after install
    env = await startFactory({
      crds: { except: ['capi', 'layering', 'hypershift'] },
      seed: { csrs: false },
      models: false,
    });
    scenario = new Scenario(env.cluster.kubeConfig());
    root = mkdtempSync(path.join(tmpdir(), 'sno-relocate-watch-'));
    await writeContextFile(createRootFs(root), STATE_DIR, SITE_CONTEXT);
    await scenario.create(
      GVR.catalogSource,
      { name: 'redhat-operators', namespace: 'openshift-marketplace' },
      { sourceType: 'grpc', image: INDEX },
      { connectionState: { lastObservedState: 'TRANSIENT_FAILURE' } },
    );
  });
  afterAll(async () => {
    await env?.stop();
  });

  it('watch --once lists the findings of a relocated factory cluster and exits 0 while none is an error', () => {
    const { code, health, findings } = onceJson();
    expect(code).toBe(0);
    expect(health).toBe('degraded');
    expect(brief(findings)).toEqual(
      expect.arrayContaining([
        `warning ${CATALOG}: TRANSIENT_FAILURE; its image is pulled by tag and only digest mirrors exist`,
        `warning ${CATALOG}: image ${INDEX} is pulled by tag and only digest mirrors cover it`,
        'warning APIService v1.packages.operators.coreos.com: not registered: PackageManifests cannot be listed',
        'info MachineOSConfig (machineconfiguration.openshift.io): not installed',
        'info Machine (cluster.x-k8s.io): not installed',
      ]),
    );
    expect(findings.filter((f) => f.severity === 'error')).toEqual([]);
    const text = once();
    expect(text.stdout).toMatch(/^Cluster: +https:\/\/127\.0\.0\.1:\d+\nHealth: +degraded\n/);
    expect(text.stdout).toContain('digest mirrors (IDMS/ICSP) do not apply to tags');
  });

  it('watch --once exits 1 while a ClusterOperator is Degraded, and 0 once it recovers', async () => {
    await setOperator('console', {
      conditions: [
        condition('Available', 'True'),
        condition('Degraded', 'True', 'ConsoleDegraded', 'console pods crashing'),
      ],
    });
    const bad = onceJson();
    expect(bad.code).toBe(1);
    expect(bad.health).toBe('unhealthy');
    expect(brief(bad.findings)[0]).toBe(
      'error ClusterOperator console: Degraded: ConsoleDegraded: console pods crashing',
    );
    await setOperator('console', healthyOperator());
    expect(onceJson().code).toBe(0);
  });

  it('fails on a kubeconfig that is not there with exit 1 as run does, naming it', () => {
    const r = runAgent(
      ['watch', '--once', '--kubeconfig', '/nonexistent/kubeconfig', '--root', root, '--state-dir', STATE_DIR],
      {},
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('kubeconfig /nonexistent/kubeconfig does not exist');
  });

  it('records what it saw, and a replay of the recording prints the same findings without a cluster', () => {
    const file = path.join(root, 'events.jsonl');
    const live = once('-o', 'json', '--record-events', file);
    const replayed = runAgent(['watch', '--replay', file, '-o', 'json', '--root', root, '--state-dir', STATE_DIR], {});
    expect(replayed.code).toBe(live.code);
    expect(replayed.stdout).toBe(live.stdout);
    expect(readFileSync(file, 'utf8')).not.toContain('managedFields');
  });

  describe('a watcher kept running', () => {
    let view: ClusterView;
    beforeAll(async () => {
      view = new ClusterView(createListWatch(env.cluster.kubeConfig()), {
        clock: systemClock,
        log: quietLog(),
        ctx: SITE_CONTEXT,
      });
      view.start();
      await view.synced(30_000);
    });
    afterAll(async () => {
      await view?.stop();
    });
    const current = () => brief(view.evaluate().findings);

    it('picks up a kind whose CRD is installed later, and its objects', async () => {
      expect(current()).toContain('info MachineOSConfig (machineconfiguration.openshift.io): not installed');
      await applyCrds(env.cluster.kubeconfigPath, { only: ['layering'] });
      await vi.waitFor(
        () =>
          expect(current()).not.toContain('info MachineOSConfig (machineconfiguration.openshift.io): not installed'),
        { timeout: 10_000, interval: 50 },
      );
      await scenario.create(
        GVR.machineOSConfig,
        { name: 'master', annotations: { 'machineconfiguration.openshift.io/current-machine-os-build': 'master-1' } },
        {
          machineConfigPool: { name: 'master' },
          imageBuilder: { imageBuilderType: 'Job' },
          renderedImagePushSecret: { name: 'push' },
          renderedImagePushSpec: `${FACTORY_REGISTRY}/os/master:latest`,
        },
      );
      const started = performance.now();
      await vi.waitFor(
        () =>
          expect(current()).toContain(
            `error MachineOSConfig master: renderedImagePushSpec still points at the factory registry (${FACTORY_REGISTRY}/os/master:latest)`,
          ),
        { timeout: 1000, interval: 20 },
      );
      expect(performance.now() - started).toBeLessThan(1000);
      await scenario.remove(GVR.machineOSConfig, 'master');
      await vi.waitFor(() => expect(current().some((f) => f.includes('MachineOSConfig master'))).toBe(false), {
        timeout: 2000,
        interval: 20,
      });
    });

    it('survives a kube-apiserver restart: it lists again and reports a change made after it', async () => {
      const errorsBefore = Object.values(view.status().errors).reduce((a, b) => a + b, 0);
      await env.cluster.restartApiServer({ downMs: 1500 });
      await setOperator('monitoring', {
        conditions: [condition('Available', 'False', 'Rollout', 'prometheus not ready')],
      });
      await vi.waitFor(
        () =>
          expect(current()).toContain('error ClusterOperator monitoring: not Available: Rollout: prometheus not ready'),
        { timeout: 45_000, interval: 100 },
      );
      expect(Object.values(view.status().errors).reduce((a, b) => a + b, 0)).toBeGreaterThan(errorsBefore);
      await setOperator('monitoring', healthyOperator());
      await vi.waitFor(() => expect(current().some((f) => f.includes('ClusterOperator monitoring'))).toBe(false), {
        timeout: 10_000,
        interval: 50,
      });
    });
  });

  it('runs until SIGTERM: journal lines on change only, the status file, the metrics endpoint, and status shows the findings', async () => {
    const consoleFile = path.join(root, 'watch-console');
    const w = startWatch([
      '--kubeconfig',
      env.cluster.kubeconfigPath,
      '--root',
      root,
      '--state-dir',
      STATE_DIR,
      '--metrics-address',
      '127.0.0.1:0',
      '--log-format',
      'json',
      '--console',
      consoleFile,
    ]);
    try {
      const url = await vi.waitFor(
        () => {
          const m = /metrics at (http:\/\/127\.0\.0\.1:\d+\/metrics)/.exec(w.log());
          expect(m).not.toBeNull();
          return m![1]!;
        },
        { timeout: 30_000, interval: 100 },
      );
      const status = () =>
        JSON.parse(runAgent(['status', '-o', 'json', '--root', root, '--state-dir', STATE_DIR], {}).stdout) as {
          watch: { health: string; findings: Finding[] } | null;
        };
      await vi.waitFor(() => expect(status().watch?.health).toBe('degraded'), { timeout: 30_000, interval: 200 });

      await setOperator('kube-apiserver', {
        // the cluster's own text, escape sequences and a newline included, reaches the console as one inert line
        conditions: [condition('Available', 'True'), condition('Degraded', 'True', 'MemberDown', FORGED)],
      });
      await vi.waitFor(() => expect(status().watch?.health).toBe('unhealthy'), { timeout: 10_000, interval: 100 });
      const metrics = await (await fetch(url)).text();
      expect(metrics).toMatch(/sno_relocate_watch_findings\{component="operators",severity="error"\} 1/);
      expect(metrics).toMatch(/sno_relocate_watch_health 2/);
      expect(metrics).toMatch(/sno_relocate_watch_last_sync_timestamp_seconds \d/);
      const table = runAgent(['status', '--root', root, '--state-dir', STATE_DIR], {}).stdout;
      expect(table).toMatch(/Watcher: +unhealthy/);
      expect(table).toMatch(/error +operators +ClusterOperator kube-apiserver +\d+s +Degraded: MemberDown/);

      // an unrelated change re-evaluates, but a finding that holds is not logged again
      await setOperator('console', { conditions: [...healthyOperator().conditions, condition('Upgradeable', 'True')] });
      await setOperator('kube-apiserver', healthyOperator());
      await vi.waitFor(() => expect(status().watch?.health).toBe('degraded'), { timeout: 10_000, interval: 100 });
      // the log arrives through a pipe: wait for the line, then check nothing was logged twice
      const events = () =>
        w
          .log()
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l) as { event?: string; msg: string; change?: string; object?: string });
      await vi.waitFor(() => expect(events().filter((l) => l.event === 'watchHealthChanged')).toHaveLength(3), {
        timeout: 5000,
        interval: 50,
      });
      expect(
        events()
          .filter((l) => l.event === 'watchFinding' && l.object === 'ClusterOperator kube-apiserver')
          .map((l) => l.change),
      ).toEqual(['raised', 'cleared']);
      expect(
        events()
          .filter((l) => l.event === 'watchHealthChanged')
          .map((l) => l.msg),
      ).toEqual([
        expect.stringMatching(/^cluster degraded: 3 warnings; /),
        `cluster unhealthy: 1 error, 3 warnings; ClusterOperator kube-apiserver: Degraded: MemberDown: ${FORGED}`,
        expect.stringMatching(/^cluster degraded: 3 warnings; /),
      ]);
      const consoleLines = readFileSync(consoleFile, 'utf8').split('\n');
      expect(consoleLines).toContain(
        'sno-relocate: cluster unhealthy: 1 error, 3 warnings; ClusterOperator kube-apiserver: Degraded: MemberDown: ' +
          'etcd\\x1b[2J\\x1b[H\\nsno-relocate: cluster healthy',
      );
      expect(consoleLines.filter((l) => l === 'sno-relocate: cluster healthy')).toEqual([]);
    } finally {
      expect(await w.stop()).toBe(0);
    }
    expect(w.log()).toMatch(/watcher stopping on SIGTERM/);
  });

  describe('the health step', () => {
    it('plans the current error findings as data and passes once they clear', async () => {
      const a = await agent(env, storeSite(), undefined, undefined, { healthTimeoutSeconds: 1 });
      await setOperator('ingress', {
        conditions: [condition('Available', 'False', 'NoRouter', 'router pods pending')],
      });
      const view = await healthStep.survey(a.ctx);
      const plan = healthStep.plan(view, a.ctx.site);
      expect(plan).toEqual({
        action: 'change',
        summary: 'wait up to 1s for 1 thing to settle, then 1s stable',
        changes: [
          {
            action: 'set',
            target: path.join(a.ctx.stateDir, 'watch-context.json'),
            summary: "the site's context for the companion watcher, which keeps watching after the run",
          },
          {
            action: 'apply',
            target: 'ClusterOperator ingress',
            summary: 'wait until it clears: not Available: NoRouter: router pods pending',
          },
        ],
        decision: { watchContext: view.watchContext, wait: { timeoutSeconds: 1, stableSeconds: 1 } },
      });
      if (plan.action !== 'change') throw new Error('expected a change');
      const ctx = { ...a.ctx, options: { healthTimeoutSeconds: 30, healthStableSeconds: 0 } };
      const decision = { ...plan.decision, wait: { timeoutSeconds: 30, stableSeconds: 0 } };
      await healthStep.apply!(ctx, decision);
      const settled = healthStep.settle!(ctx, decision);
      await setOperator('ingress', healthyOperator());
      await settled;
      await verifyStep(healthStep, ctx);
      expect(await planOf(healthStep, ctx)).toMatchObject({
        action: 'noop',
        reason: expect.stringMatching(/^cluster healthy and settled now \(\d+ warnings, \d+ notes\)$/),
      });
      const kept = JSON.parse(readFileSync(path.join(a.root, STATE_DIR, 'watch-context.json'), 'utf8')) as WatchContext;
      expect(kept.tagMirrorSources).toEqual(['registry.redhat.io/redhat']);
    });

    it("waits while the site's names do not resolve or answer on a single-node dnsmasq node", async () => {
      const root = mkdtempSync(path.join(tmpdir(), 'sno-relocate-names-'));
      laySingleNodeDnsmasq(root);
      // nothing serves DNS, the API or the router on this loopback address: what a node shows
      // while dnsmasq lacks the names
      writeFileSync(path.join(root, 'etc/resolv.conf'), 'nameserver 127.0.0.2\n');
      const site = storeSite();
      const a = await agent(env, { ...site, network: { ...site.network, internalIP: '127.0.0.2/8' } }, root);
      const plan = await planOf(healthStep, a.ctx);
      if (plan.action !== 'change') throw new Error(`expected a change, got ${JSON.stringify(plan)}`);
      const names = plan.changes.filter((c) => c.target.includes('.sno.store42.example.com'));
      // each name that does not resolve, then each endpoint whose certificate cannot be checked
      expect(names.map((c) => c.target)).toEqual([
        'api.sno.store42.example.com',
        'api-int.sno.store42.example.com',
        'console-openshift-console.apps.sno.store42.example.com',
        'api.sno.store42.example.com at 127.0.0.2:6443',
        'console-openshift-console.apps.sno.store42.example.com at 127.0.0.2:443',
        'oauth-openshift.apps.sno.store42.example.com at 127.0.0.2:443',
      ]);
      expect(names[0]!.summary).toMatch(/^wait until it clears: does not resolve to 127\.0\.0\.2 on the node \(/);
      expect(names[3]!.summary).toBe('wait until it clears: nothing answers (ECONNREFUSED)');
    });

    it('fails after the timeout, listing the findings', async () => {
      const a = await agent(env, storeSite(), undefined, undefined, { healthTimeoutSeconds: 1 });
      await setOperator('authentication', {
        conditions: [
          condition('Available', 'True'),
          condition('Degraded', 'True', 'OAuthServerRouteEndpointAccessibleControllerDegraded'),
        ],
      });
      const plan = healthStep.plan(await healthStep.survey(a.ctx), a.ctx.site);
      if (plan.action !== 'change') throw new Error('expected a change');
      const failed = await healthStep.settle!(a.ctx, plan.decision).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(failed).toBeInstanceOf(VerificationError);
      expect((failed as Error).message).toBe(
        'cluster not healthy after 1s: 1 left: ClusterOperator authentication: Degraded: OAuthServerRouteEndpointAccessibleControllerDegraded',
      );
      await setOperator('authentication', healthyOperator());
    });

    it("warns once settled, naming the records, when the site's DNS does not resolve the site's names", async () => {
      const site = storeSite();
      // nothing serves DNS on this loopback address: a site DNS that cannot say where the cluster is
      const a = await agent(
        env,
        { ...site, network: { ...site.network, nmstate: { 'dns-resolver': { config: { server: ['127.0.0.2'] } } } } },
        undefined,
        undefined,
        { healthTimeoutSeconds: 30, healthStableSeconds: 0 },
      );
      await healthStep.settle!(a.ctx, {
        watchContext: contextFromSite(a.ctx.site),
        wait: { timeoutSeconds: 30, stableSeconds: 0 },
      });
      const warnings = a.logs
        .map((l) => JSON.parse(l) as { level: number; msg: string })
        .filter((l) => l.msg.includes("site's DNS"));
      expect(warnings.map((w) => [w.level, w.msg])).toEqual([
        [
          40,
          "health: the site's DNS (127.0.0.2) does not resolve api.sno.store42.example.com and *.apps.sno.store42.example.com: add A records for api.sno.store42.example.com and *.apps.sno.store42.example.com pointing at the node's site address, or clients at the site cannot reach the cluster",
        ],
      ]);
    });
  });
});
