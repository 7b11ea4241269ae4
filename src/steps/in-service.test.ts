import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testNode, testSite } from '../../test/node/context.js';
import { probeProblem } from '../watch/in-service.js';
import { inServiceStep } from './in-service.js';
import { planOf } from '../engine/engine.js';

describe('in-service step', () => {
  let server: Server;
  let base: string;
  beforeAll(async () => {
    server = createServer((req, res) => {
      res.statusCode = req.url === '/ready' ? 200 : 503;
      res.end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('has nothing to wait for without inService, and never asks the API', async () => {
    const { ctx } = testNode({ site: testSite(), factory: false });
    await expect(planOf(inServiceStep, ctx)).resolves.toEqual({
      action: 'noop',
      reason: 'the site-config names no workloads to wait for',
    });
  });

  it('probes the URL from the node: 2xx is ready, anything else names the answer', async () => {
    await expect(probeProblem({ url: `${base}/ready`, insecure: false })).resolves.toBeUndefined();
    await expect(probeProblem({ url: `${base}/starting`, insecure: false })).resolves.toBe('answered 503');
    await expect(probeProblem({ url: 'http://127.0.0.1:1/', insecure: false })).resolves.toMatch(/ECONNREFUSED/);
  });

  it('probes an IPv6 literal in brackets, as the site-config writes it', async () => {
    const v6 = createServer((req, res) => {
      res.statusCode = req.url === '/ready' ? 200 : 503;
      res.end();
    });
    await new Promise<void>((resolve) => v6.listen(0, '::1', resolve));
    try {
      const url = `http://[::1]:${(v6.address() as AddressInfo).port}`;
      await expect(probeProblem({ url: `${url}/ready`, insecure: false })).resolves.toBeUndefined();
      await expect(probeProblem({ url: `${url}/starting`, insecure: false })).resolves.toBe('answered 503');
    } finally {
      await new Promise<void>((resolve) => v6.close(() => resolve()));
    }
  });

  it('plans a wait for a probe that does not answer yet', async () => {
    const { ctx } = testNode({
      factory: false,
      site: testSite({
        inService: { workloads: [], probe: { url: `${base}/starting`, insecure: false }, timeoutSeconds: 60 },
      }),
    });
    await expect(planOf(inServiceStep, ctx)).resolves.toEqual({
      action: 'change',
      summary: 'wait up to 60s for 1 workload(s) to be ready',
      changes: [{ action: 'apply', target: `${base}/starting`, summary: 'wait until ready: answered 503' }],
      decision: { inService: ctx.site.inService, stableSeconds: 0 },
    });
  });
});

describe('in-service decisions', () => {
  const spec = { workloads: [{ kind: 'Deployment' as const, namespace: 'vdu', name: 'du-app' }], timeoutSeconds: 600 };
  const rolling = [{ what: 'Deployment vdu/du-app', why: '1 of 3 replicas available' }];
  it.each([
    ['no inService', [], true, undefined, 'noop', undefined],
    ['every workload ready', [], true, spec, 'noop', undefined],
    // readiness older than the run is watched through a window of its own
    ['every workload ready, as reported before the run started', [], false, spec, 'change', 30],
    ['one rolling out', rolling, true, spec, 'change', 0],
    ['one rolling out, the rest reported before the run started', rolling, false, spec, 'change', 30],
  ] as const)('%s', (_, waiting, seen, inService, action, stableSeconds) => {
    const view = { waiting: [...waiting], seen, stableSeconds: 30 };
    const plan = inServiceStep.plan(view, testSite(inService ? { inService } : {}));
    expect(plan.action).toBe(action);
    expect(plan.action === 'change' ? plan.decision : undefined).toEqual(
      stableSeconds === undefined ? undefined : { inService, stableSeconds },
    );
  });
});
