/**
 * The watcher's Cluster API findings on a real kube-apiserver holding the upstream CRDs of both
 * groups (test/watch/capi-scenario.ts): owners told apart, stored versions no longer served, a
 * conversion webhook with nothing ready behind it, Clusters and Machines by their v1beta2 conditions
 * or their v1beta1 fields, and HyperShift's migrations; and each error clears once its fix is made.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Finding } from '../../src/watch/model.js';
import { startFactory, type ClusterEnv } from '../cluster/env.js';
import { runAgent } from '../node/cli.js';
import { CAPI_FINDINGS, CAPI_QUIET, HYPERSHIFT_WEBHOOK, seedCapi } from './capi-scenario.js';

const kubeSkipped = process.env.SNO_RELOCATE_SKIP_KUBE === '1';

describe.skipIf(kubeSkipped)('the watcher on Cluster API, public and private types, on a real API', () => {
  let env: ClusterEnv;
  let root: string;

  const findings = () => {
    const r = runAgent(
      ['watch', '--once', '-o', 'json', '--kubeconfig', env.cluster.kubeconfigPath, '--root', root],
      {},
    );
    expect(r.stderr).not.toMatch(/ERROR/);
    return { code: r.code, findings: (JSON.parse(r.stdout) as { findings: Finding[] }).findings };
  };
  const capi = (all: Finding[]) =>
    all.filter((f) => f.component === 'capi').map((f) => `${f.severity} ${f.object}: ${f.reason}`);

  beforeAll(async () => {
    env = await startFactory({ crds: { except: ['capi', 'hypershift'] }, seed: { csrs: false }, models: false });
    await seedCapi(env.cluster.kubeConfig(), env.cluster.kubeconfigPath);
    root = mkdtempSync(path.join(tmpdir(), 'sno-relocate-capi-'));
  });
  afterAll(async () => {
    await env?.stop();
  });

  it('reports each broken object once, by name, and nothing on the healthy ones', () => {
    const { code, findings: all } = findings();
    expect(code).toBe(1);
    expect(capi(all).sort()).toEqual([...CAPI_FINDINGS].sort());
    const quiet = new Set(CAPI_QUIET);
    expect(all.filter((f) => quiet.has(f.object))).toEqual([]);
    // the private kinds exist here: no "not installed" for them, nor for the public ones
    expect(capi(all).filter((f) => f.includes('not installed'))).toEqual([]);
  });

  it('names the fix for a stored version no longer served, and the finding clears once it is made', async () => {
    const crd = 'machines.cluster.hypershift.openshift.io';
    const stored = findings().findings.find((f) => f.object === `CRD ${crd}` && f.reason.startsWith('stored'));
    expect(stored?.hint).toContain('run the storage migration');
    expect(stored?.hint).toContain(
      `then trim status.storedVersions to [v1beta2]: kubectl patch crd ${crd} --subresource=status`,
    );
    // the objects are stored as v1beta2 already (written so): trimming is all that is left
    await env.cluster
      .kubeConfig()
      .makeApiClient(CustomObjectsApi)
      .patchClusterCustomObjectStatus({
        group: 'apiextensions.k8s.io',
        version: 'v1',
        plural: 'customresourcedefinitions',
        name: crd,
        body: [{ op: 'replace', path: '/status/storedVersions', value: ['v1beta2'] }],
      });
    expect(capi(findings().findings).filter((f) => f.includes(`CRD ${crd}`))).toEqual([]);
  });

  it('clears the conversion webhook error once its Service has a ready endpoint', async () => {
    const webhookError = (all: Finding[]) => capi(all).filter((f) => f.includes('conversion webhook Service'));
    expect(webhookError(findings().findings)).toHaveLength(1);
    await env.cluster
      .kubeConfig()
      .makeApiClient(CoreV1Api)
      .replaceNamespacedEndpoints({
        ...HYPERSHIFT_WEBHOOK,
        body: {
          metadata: HYPERSHIFT_WEBHOOK,
          subsets: [{ addresses: [{ ip: '10.128.0.21' }], ports: [{ port: 9443 }] }],
        },
      });
    expect(webhookError(findings().findings)).toEqual([]);
  });
});
