import { describe, expect, it } from 'vitest';
import { testNode, testSite } from '../../test/node/context.js';
import { type ProxyView, proxyStep } from './proxy.js';
import { planOf, verifyStep } from '../engine/engine.js';

describe('proxy step', () => {
  it("keeps the cluster's proxy and trust bundle when the site-config gives neither, without asking the API", async () => {
    const { ctx } = testNode({ site: testSite(), factory: false });
    await expect(planOf(proxyStep, ctx)).resolves.toEqual({
      action: 'noop',
      reason: "the site-config gives no proxy and no trust bundle: the cluster's stay as they are",
    });
    await expect(verifyStep(proxyStep, ctx)).resolves.toBeUndefined();
  });

  it('reruns when the proxy or the bundle changes: its inputs hold both', () => {
    const a = proxyStep.inputs(testSite({ proxy: { httpProxy: 'http://a:3128' } }));
    const b = proxyStep.inputs(testSite({ proxy: { httpProxy: 'http://b:3128' } }));
    const c = proxyStep.inputs(
      testSite({ proxy: { httpProxy: 'http://a:3128' }, trustBundle: { caBundlePem: 'x', proxyTrustedCA: true } }),
    );
    expect(new Set([a, b, c].map((i) => JSON.stringify(i))).size).toBe(3);
  });
});

describe('proxy decisions', () => {
  const PEM = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
  const proxy = (spec: Record<string, unknown>) => ({
    apiVersion: 'config.openshift.io/v1',
    kind: 'Proxy',
    metadata: { name: 'cluster' },
    spec,
  });
  const bundle = (pem: string) => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'user-ca-bundle' },
    data: { 'ca-bundle.crt': pem },
  });
  const site = { httpProxy: 'http://proxy.store42:3128', noProxy: '.store42' };
  const awaitRevision = { httpProxy: site.httpProxy };
  it.each([
    [
      'a proxy to set',
      { proxy: proxy({}) },
      { proxy: site },
      'change',
      ['update Proxy cluster'],
      { proxyPatch: site, awaitRevision },
    ],
    ['the proxy in place', { proxy: proxy(site) }, { proxy: site }, 'noop', [], undefined],
    [
      'a field the site leaves out is cleared',
      { proxy: proxy({ ...site, httpsProxy: 'http://old:3128' }) },
      { proxy: site },
      'change',
      ['update Proxy cluster'],
      { proxyPatch: { httpsProxy: null }, awaitRevision },
    ],
    [
      'a bundle for the proxy, nothing there',
      { proxy: proxy({}) },
      { trustBundle: { caBundlePem: PEM, proxyTrustedCA: true } },
      'change',
      ['create ConfigMap openshift-config/user-ca-bundle', 'update Proxy cluster'],
      { userCaBundle: { write: 'create', pem: PEM }, proxyPatch: { trustedCA: { name: 'user-ca-bundle' } } },
    ],
    [
      'a new bundle, the proxy in place: the revision is still waited for',
      { proxy: proxy(site), userCaBundle: bundle('old') },
      { proxy: site, trustBundle: { caBundlePem: PEM, proxyTrustedCA: false } },
      'change',
      ['update ConfigMap openshift-config/user-ca-bundle'],
      { userCaBundle: { write: 'update', pem: PEM }, awaitRevision },
    ],
    [
      'a bundle not for the proxy, in place',
      { proxy: proxy({}), userCaBundle: bundle(PEM) },
      { trustBundle: { caBundlePem: PEM, proxyTrustedCA: false } },
      'noop',
      [],
      undefined,
    ],
    ['no Proxy object', {}, { proxy: site }, 'conflict', [], undefined],
  ] as const)('%s', (_, view, parts, action, changes, decision) => {
    const plan = proxyStep.plan(view as ProxyView, testSite(parts));
    expect(plan.action).toBe(action);
    expect(plan.action === 'change' ? plan.changes.map((c) => `${c.action} ${c.target}`) : []).toEqual(changes);
    expect(plan.action === 'change' ? plan.decision : undefined).toEqual(decision);
  });
});
