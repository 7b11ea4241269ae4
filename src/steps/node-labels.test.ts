import { describe, expect, it } from 'vitest';
import { testNode, testSite } from '../../test/node/context.js';
import { nodeLabelsStep } from './node-labels.js';
import { planOf, verifyStep } from '../engine/engine.js';

describe('node-labels step', () => {
  it('leaves the Node alone when the site-config sets no labels, without asking the API', async () => {
    const { ctx } = testNode({ site: testSite(), factory: false });
    await expect(planOf(nodeLabelsStep, ctx)).resolves.toEqual({
      action: 'noop',
      reason: 'the site-config sets no node labels (any an earlier one set stay)',
    });
    // verified as well, with no Node to look at (the engine verifies a step whose plan was noop)
    await expect(verifyStep(nodeLabelsStep, ctx)).resolves.toBeUndefined();
  });

  it('reruns when a label changes: its inputs hold the labels', () => {
    const a = nodeLabelsStep.inputs(testSite({ nodeLabels: { zone: 'a' } }));
    const b = nodeLabelsStep.inputs(testSite({ nodeLabels: { zone: 'b' } }));
    expect(a).not.toEqual(b);
  });
});

describe('node-labels decisions', () => {
  const node = (labels: Record<string, string>, owned?: string) => ({
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: 'store-42',
      labels,
      ...(owned !== undefined && { annotations: { 'sno-relocate.openshift.io/node-labels': owned } }),
    },
  });
  const role = { 'node-role.kubernetes.io/master': '' };
  type Row = [
    string,
    ReturnType<typeof node> | undefined,
    Record<string, string>,
    'change' | 'noop',
    string[],
    object?,
  ];
  const patch = (labels: Record<string, string | null>, owned: string, awaitRegistration = false) => ({
    node: 'store-42',
    awaitRegistration,
    labels,
    owned,
  });
  it.each<Row>([
    [
      'not registered yet',
      undefined,
      { zone: 'a', rack: '7' },
      'change',
      ['set Node store-42 label zone', 'set Node store-42 label rack'],
      patch({ zone: 'a', rack: '7' }, 'rack,zone', true),
    ],
    [
      'a label to add',
      node(role),
      { zone: 'a' },
      'change',
      ['set Node store-42 label zone'],
      patch({ zone: 'a' }, 'zone'),
    ],
    [
      'a label to change',
      node({ ...role, zone: 'b' }, 'zone'),
      { zone: 'a' },
      'change',
      ['update Node store-42 label zone'],
      patch({ zone: 'a' }, 'zone'),
    ],
    ['in place', node({ ...role, zone: 'a' }, 'zone'), { zone: 'a' }, 'noop', []],
    [
      'an earlier site label to take away, the role label kept',
      node({ ...role, zone: 'a', rack: '7' }, 'rack,zone'),
      { zone: 'a' },
      'change',
      ['delete Node store-42 label rack'],
      patch({ rack: null }, 'zone'),
    ],
    [
      'an earlier site label already gone by hand',
      node({ ...role, zone: 'b' }, 'rack,zone'),
      { zone: 'a' },
      'change',
      ['update Node store-42 label zone'],
      patch({ zone: 'a' }, 'zone'),
    ],
    [
      'the labels in place but not recorded',
      node({ ...role, zone: 'a' }),
      { zone: 'a' },
      'change',
      ['update Node store-42'],
      patch({}, 'zone'),
    ],
    ['no labels: the Node is left alone', node({ ...role, rack: '7' }, 'rack'), {}, 'noop', []],
  ])('%s', (_, n, nodeLabels, action, changes, decision) => {
    const plan = nodeLabelsStep.plan({ name: 'store-42', ...(n && { node: n }) }, testSite({ nodeLabels }));
    expect(plan.action).toBe(action);
    expect(plan.action === 'change' ? plan.changes.map((c) => `${c.action} ${c.target}`) : []).toEqual(changes);
    expect(plan.action === 'change' ? plan.decision : undefined).toEqual(decision);
  });
});
