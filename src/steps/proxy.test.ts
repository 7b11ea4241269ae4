import { describe, expect, it } from 'vitest';
import { testNode, testSite } from '../../test/node/context.js';
import { proxyStep } from './proxy.js';

describe('proxy step', () => {
  it("keeps the cluster's proxy and trust bundle when the site-config gives neither, without asking the API", async () => {
    const { ctx } = testNode({ site: testSite(), factory: false });
    await expect(proxyStep.plan(ctx)).resolves.toEqual({
      action: 'noop',
      reason: "the site-config gives no proxy and no trust bundle: the cluster's stay as they are",
    });
    await expect(proxyStep.verify(ctx)).resolves.toBeUndefined();
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
