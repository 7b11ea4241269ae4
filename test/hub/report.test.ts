/**
 * The hub report on a real kube-apiserver: the agent installs its SiteRelocation CRD, creates the
 * object as soon as the API answers, keeps its status current at every step (a step reads it back
 * while it runs), ends with the result, the watcher's error count and the site CA's certificate, and
 * never writes a secret. kubectl reads it as an operator would.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Site } from '../../src/config/site.js';
import type { StepContext } from '../../src/steps/step.js';
import { createBanner } from '../../src/engine/banner.js';
import { runSteps } from '../../src/engine/engine.js';
import { StateStore } from '../../src/engine/state.js';
import type { SiteBase, Step } from '../../src/engine/step.js';
import {
  hubObserver,
  publishReport,
  REPORT_API_VERSION,
  REPORT_CRD,
  REPORT_GROUP,
  REPORT_KIND,
  REPORT_NAME,
  REPORT_PLURAL,
  reportStatus,
  type ReportStatus,
} from '../../src/hub/report.js';
import type { RunState } from '../../src/engine/state.js';
import { connectKube } from '../../src/kube/client.js';
import { createLogger } from '../../src/log/logger.js';
import { systemClock } from '../../src/ports/clock.js';
import { createRootFs, type RootFs } from '../../src/ports/fs.js';
import type { Kube, KubeObject } from '../../src/ports/kube.js';
import { missingBinaries, startCluster, type TestCluster } from '../kube/cluster.js';

const skip = missingBinaries().length > 0;
const STATE_DIR = '/var/lib/sno-relocate';
const REF = { apiVersion: REPORT_API_VERSION, kind: REPORT_KIND, name: REPORT_NAME };
const CA_PEM = '-----BEGIN CERTIFICATE-----\nMIIBsite\n-----END CERTIFICATE-----\n';

let cluster: TestCluster;
let kube: Kube;
let work: string;
const quiet = createLogger({ write: () => undefined, journal: false });

/** What a hub would read: a client of its own, whose discovery did not see the API before the CRD. */
const statusOf = async (): Promise<ReportStatus | undefined> => {
  const reader = await connectKube(cluster.kubeconfigPath, quiet);
  return ((await reader.get(REF)) as (KubeObject & { status?: ReportStatus }) | undefined)?.status;
};

/** A step that does nothing but record what the hub would read while it runs. */
function step(
  name: string,
  group: 'node' | 'cluster',
  during?: (fs: RootFs) => Promise<void>,
): Step<SiteBase, boolean, string> {
  let done = false;
  return {
    name,
    group,
    description: name,
    inputs: () => name,
    survey: async () => done,
    plan: (applied) =>
      applied
        ? { action: 'noop', reason: 'done' }
        : { action: 'change', summary: name, changes: [{ action: 'set', target: name }], decision: name },
    apply: async (ctx) => {
      await during?.(ctx.fs);
      done = true;
    },
  };
}

function run(steps: Step[], root: string) {
  const fs = createRootFs(root);
  const log = createLogger({ write: () => undefined, journal: false, level: 'warn' });
  const ctx = {
    site: { name: 'store-0042' } as Site,
    fs,
    log,
    clock: systemClock,
    stateDir: STATE_DIR,
    kube: async () => kube,
  } as unknown as StepContext;
  return runSteps({
    steps,
    selected: new Set(steps.map((s) => s.name)),
    ctx,
    store: new StateStore(fs, STATE_DIR),
    banner: createBanner(undefined),
    configHash: 'h',
    observer: hubObserver({ fs, clock: systemClock, log, stateDir: STATE_DIR }, ctx.kube),
  });
}

beforeAll(async () => {
  if (skip) return;
  cluster = await startCluster();
  kube = await connectKube(cluster.kubeconfigPath, quiet);
  work = mkdtempSync(path.join(tmpdir(), 'hub-report-'));
}, 120_000);
afterAll(async () => {
  await cluster?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

describe.skipIf(skip)('the hub report (SiteRelocation)', () => {
  it('is absent until kubelet is up, then current at every step, and complete at the end', async () => {
    const root = path.join(work, 'ok');
    const seen: (ReportStatus | undefined)[] = [];
    const steps = [
      step('network', 'node', async () => void seen.push(await statusOf())),
      step('kubelet', 'node'),
      step('domain', 'cluster', async (fs) => {
        seen.push(await statusOf());
        await fs.writeAtomic(`${STATE_DIR}/site-ca/ca.crt`, CA_PEM, { mode: 0o644 });
        await fs.writeAtomic(`${STATE_DIR}/site-ca/ca.key`, 'PRIVATE-CA-KEY', { mode: 0o600 });
      }),
      step('mirrors', 'cluster', async () => void seen.push(await statusOf())),
    ];
    await run(steps, root);
    // before kubelet the API is not there to ask: nothing was written, and nothing waited for it
    expect(seen[0]).toBeUndefined();
    expect(seen[1]).toMatchObject({ phase: 'Running', currentStep: 'domain', site: 'store-0042' });
    expect(seen[2]).toMatchObject({ phase: 'Running', currentStep: 'mirrors', siteCACertificate: CA_PEM });
    const final = await statusOf();
    expect(final).toMatchObject({ phase: 'Succeeded', watcherErrorCount: 0, siteCACertificate: CA_PEM });
    expect(final!.currentStep).toBeUndefined();
    expect(final!.steps.map((s) => [s.name, s.status])).toEqual([
      ['network', 'done'],
      ['kubelet', 'done'],
      ['domain', 'done'],
      ['mirrors', 'done'],
    ]);
    for (const s of final!.steps) expect(Date.parse(s.finishedAt!)).toBeGreaterThanOrEqual(Date.parse(s.startedAt));
    expect(final!.agentVersion).toMatch(/^\d+\.\d+\.\d+/);
    expect(JSON.stringify(final)).not.toContain('PRIVATE-CA-KEY');
  });

  it('says Failed, on which step and why, with the secret in the message scrubbed', async () => {
    const root = path.join(work, 'failed');
    const steps = [
      step('kubelet', 'node'),
      step('routes', 'cluster', async () => {
        throw new Error('route store: token Bearer abcdefghijklmnop rejected');
      }),
    ];
    await expect(run(steps, root)).rejects.toThrow();
    const final = await statusOf();
    expect(final).toMatchObject({ phase: 'Failed', currentStep: 'routes' });
    expect(final!.message).toContain('route store');
    expect(JSON.stringify(final)).not.toContain('abcdefghijklmnop');
  });

  it('reads with kubectl get as an operator would, printer columns included', () => {
    const out = execFileSync('kubectl', ['--kubeconfig', cluster.kubeconfigPath, 'get', 'siterelocations'], {
      encoding: 'utf8',
    });
    expect(out).toMatch(/NAME\s+SITE\s+PHASE\s+STEP\s+UPDATED/);
    expect(out).toMatch(/sno-relocate\s+store-0042\s+Failed\s+routes/);
  });

  it('updates a CRD an older agent installed, so the image-based fields are not pruned', async () => {
    const crdRef = {
      apiVersion: REPORT_CRD.apiVersion,
      kind: REPORT_CRD.kind,
      name: `${REPORT_PLURAL}.${REPORT_GROUP}`,
    };
    const old = structuredClone(REPORT_CRD);
    const schema = old.spec.versions[0]!.schema.openAPIV3Schema.properties.status;
    const added = ['clusterID', 'infraID', 'mediaInfraID', 'warnings', 'unusedFields'];
    (schema as { properties: object }).properties = Object.fromEntries(
      Object.entries(schema.properties).filter(([field]) => !added.includes(field)),
    );
    await kube.update(crdRef, (current) => ({
      ...current,
      spec: { ...(current.spec as object), versions: old.spec.versions },
    }));
    const log = createLogger({ write: () => undefined, journal: false });
    const fs = createRootFs(path.join(work, 'upgraded'));
    const now = new Date().toISOString();
    await publishReport(kube, systemClock, {
      ...(await reportStatus({ fs, clock: systemClock, log, stateDir: STATE_DIR }, {
        site: 'store-0042',
        result: 'succeeded',
        startedAt: now,
        steps: {},
      } as unknown as RunState)),
      clusterID: 'e6a68c95-0e2c-4b5a-9f62-3c0e1d2f8a11',
    });
    expect(await statusOf()).toMatchObject({ clusterID: 'e6a68c95-0e2c-4b5a-9f62-3c0e1d2f8a11' });
  });
});
