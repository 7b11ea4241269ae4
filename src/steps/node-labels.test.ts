import { describe, expect, it } from 'vitest';
import { testNode, testSite } from '../../test/node/context.js';
import { nodeLabelsStep } from './node-labels.js';

describe('node-labels step', () => {
  it('leaves the Node alone when the site-config sets no labels, without asking the API', async () => {
    const { ctx } = testNode({ site: testSite(), factory: false });
    await expect(nodeLabelsStep.plan(ctx)).resolves.toEqual({
      action: 'noop',
      reason: 'the site-config sets no node labels (any an earlier one set stay)',
    });
    // verified as well, with no Node to look at (the engine verifies a step whose plan was noop)
    await expect(nodeLabelsStep.verify(ctx)).resolves.toBeUndefined();
  });

  it('reruns when a label changes: its inputs hold the labels', () => {
    const a = nodeLabelsStep.inputs(testSite({ nodeLabels: { zone: 'a' } }));
    const b = nodeLabelsStep.inputs(testSite({ nodeLabels: { zone: 'b' } }));
    expect(a).not.toEqual(b);
  });
});
