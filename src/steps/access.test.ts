import { describe, expect, it } from 'vitest';
import { testNode, testSite } from '../../test/node/context.js';
import { accessStep } from './access.js';

describe('access step', () => {
  it("keeps the factory's access when the site-config gives none, without asking the API", async () => {
    const { ctx } = testNode({ site: testSite(), factory: false });
    await expect(accessStep.plan(ctx)).resolves.toEqual({
      action: 'noop',
      reason: "the site-config gives no admin client CA and no kubeadmin hash: the factory's access stays",
    });
  });

  it('reruns when the hash changes: its inputs hold the access settings', () => {
    const a = accessStep.inputs(testSite({ access: { kubeadminPasswordHash: 'one' } }));
    const b = accessStep.inputs(testSite({ access: { kubeadminPasswordHash: 'two' } }));
    expect(a).not.toEqual(b);
  });
});
