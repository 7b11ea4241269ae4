/**
 * What the journeys (journey-*.test.ts) share with the scenarios that move one booted node from
 * stick to stick: waiting for the agent's next run, a stick swapped for the next, a stick refused
 * with nothing changed, and what the domain step left in the cluster, read back through the real
 * API the node's run wrote to.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { CONFIG_NAMESPACE, MANAGED_BY, MANAGED_BY_LABEL, ROUTER_NAMESPACE } from '../../src/kube/openshift.js';
import type { ClusterEnv } from '../cluster/env.js';
import { expect } from 'vitest';
import { AGENT_UNIT } from './node-image.js';
import { diffSnapshots, events, MessageId, NODE_TREES, snapshotTrees } from './node-checks.js';
import { MIN, waitAgentExited, waitAgentSucceeded } from './scenario.js';
import type { Vm } from './vm.js';

const exec = promisify(execFile);

/** Waits until the agent's run number `n` of this boot has finished, and expects it to have succeeded. */
export async function waitRun(v: Vm, n: number): Promise<void> {
  await v.waitFor(
    `journalctl -b 0 -q -o cat --no-pager MESSAGE_ID=${MessageId.runFinished} | wc -l`,
    (r) => Number(r.stdout.trim()) >= n,
    6 * MIN,
  );
  await waitAgentSucceeded(v);
}

/** Unplugs the stick of the last run and plugs the next one; waits for that run to succeed. */
export async function moveTo(v: Vm, stick: string): Promise<void> {
  const runs = (await events(v, 'runFinished')).length;
  await v.unplugStick();
  await v.plugStick(stick);
  await waitRun(v, runs + 1);
}

export interface DomainView {
  /** the agent's kubernetes.io/tls Secrets (openshift-config, openshift-ingress): name, DNS names of the certificate */
  certificates: Record<string, string[]>;
  /** ingress.config/cluster, apiserver.config/cluster and the default IngressController, as JSON */
  configs: string;
}

/**
 * What the domain step left in the cluster: each of the agent's serving certificates with the names
 * the host's openssl reads in it, and the three config objects it writes to. Read once the models
 * have settled (the kube-apiserver's restarts for the named certificate).
 */
export async function domainView(env: ClusterEnv): Promise<DomainView> {
  await env.models!.settled();
  const kc = env.cluster.kubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  const custom = kc.makeApiClient(CustomObjectsApi);
  const secrets = (
    await Promise.all(
      [CONFIG_NAMESPACE, ROUTER_NAMESPACE].map((namespace) =>
        core.listNamespacedSecret({ namespace, labelSelector: `${MANAGED_BY_LABEL}=${MANAGED_BY}` }),
      ),
    )
  ).flatMap((l) => l.items.filter((s) => s.type === 'kubernetes.io/tls'));
  const dir = await mkdtemp(join(tmpdir(), 'sno-e2e-domain-'));
  const certificates: Record<string, string[]> = {};
  try {
    for (const s of secrets) {
      const file = join(dir, 'tls.crt');
      await writeFile(file, Buffer.from(s.data!['tls.crt']!, 'base64'));
      const san = (await exec('openssl', ['x509', '-noout', '-ext', 'subjectAltName', '-in', file])).stdout;
      certificates[`${s.metadata!.namespace}/${s.metadata!.name}`] = [...san.matchAll(/DNS:([^,\s]+)/g)]
        .map((m) => m[1]!)
        .sort();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  const configs = await Promise.all([
    custom.getClusterCustomObject({
      group: 'config.openshift.io',
      version: 'v1',
      plural: 'ingresses',
      name: 'cluster',
    }),
    custom.getClusterCustomObject({
      group: 'config.openshift.io',
      version: 'v1',
      plural: 'apiservers',
      name: 'cluster',
    }),
    custom.getNamespacedCustomObject({
      group: 'operator.openshift.io',
      version: 'v1',
      namespace: 'openshift-ingress-operator',
      plural: 'ingresscontrollers',
      name: 'default',
    }),
  ]);
  return { certificates, configs: JSON.stringify(configs.map((o) => (o as { spec?: unknown }).spec)) };
}

/**
 * Plugs `stick` and expects the agent to refuse it (exit 3) when it is admitted: no step begun, and
 * the hostname, the links and every file under NODE_TREES as they were. Unplugs it; returns the
 * agent's journal of this boot, which says why.
 */
export async function expectRefusedUnchanged(v: Vm, stick: string): Promise<string> {
  const links = 'ip -o link show | cut -d: -f2 | sort';
  const before = { hostname: await v.sshOk('hostnamectl hostname'), links: await v.sshOk(links) };
  const trees = await snapshotTrees(v, NODE_TREES);
  const id = await v.plugStick(stick);
  await waitAgentExited(v, '3/');
  expect(await events(v, 'stepStarted')).toEqual([]);
  expect(diffSnapshots(trees, await snapshotTrees(v, NODE_TREES))).toEqual([]);
  expect({ hostname: await v.sshOk('hostnamectl hostname'), links: await v.sshOk(links) }).toEqual(before);
  await v.unplugStick(id);
  return v.sshOk(`journalctl -b 0 -u ${AGENT_UNIT} -o cat --no-pager`);
}
