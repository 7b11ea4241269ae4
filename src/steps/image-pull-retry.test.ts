import { describe, expect, it } from 'vitest';
import { testSite } from '../../test/node/context.js';
import {
  imagePullRetryStep,
  type PodObject,
  type PullRetryDecision,
  type PullRetryView,
  stuckPods,
} from './image-pull-retry.js';

const pod = (name: string, reason: string, parts: Partial<PodObject['metadata']> = {}): PodObject => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'shop', creationTimestamp: '2026-11-28T10:00:00Z', ...parts },
  status: { containerStatuses: [{ name: 'web', image: 'quay.io/shop/web:1', state: { waiting: { reason } } }] },
});
const RS = { ownerReferences: [{ kind: 'ReplicaSet', name: 'web-5d8f', controller: true }] };
const RUN = '2026-11-28T11:00:00Z';

describe('stuckPods', () => {
  it('finds pods from before the run that wait on a failed pull, not the ones going away or made since', () => {
    const found = stuckPods(
      [
        pod('backoff', 'ImagePullBackOff', RS),
        pod('err', 'ErrImagePull'),
        pod('running', 'ContainerCreating', RS),
        pod('going', 'ImagePullBackOff', { ...RS, deletionTimestamp: RUN }),
        pod('new', 'ImagePullBackOff', { ...RS, creationTimestamp: '2026-11-28T11:00:01Z' }),
        pod('static', 'ErrImagePull', { ...RS, annotations: { 'kubernetes.io/config.mirror': 'x' } }),
      ],
      RUN,
    );
    expect(found.map((s) => [s.pod, s.controller])).toEqual([
      ['shop/backoff', 'ReplicaSet web-5d8f'],
      ['shop/err', undefined],
      ['shop/static', undefined],
    ]);
  });
});

describe('image-pull-retry decisions, on plain views', () => {
  const [managed, bare] = stuckPods([pod('backoff', 'ImagePullBackOff', RS), pod('bare', 'ErrImagePull')], RUN);
  it.each<[string, PullRetryView, 'noop' | 'change', PullRetryDecision | undefined, number]>([
    ['the site switches nothing', { switches: false, stuck: [managed!] }, 'noop', undefined, 0],
    ['nothing stuck', { switches: true, stuck: [] }, 'noop', undefined, 0],
    ['only a bare pod: listed, left alone', { switches: true, stuck: [bare!] }, 'noop', undefined, 1],
    [
      'a pod its controller recreates',
      { switches: true, stuck: [managed!, bare!] },
      'change',
      { recreate: [managed!] },
      1,
    ],
  ])('%s', (_, view, action, decision, warnings) => {
    const plan = imagePullRetryStep.plan(view, testSite());
    expect(plan.action).toBe(action);
    expect(plan.action === 'change' ? plan.decision : undefined).toEqual(decision);
    expect(plan.action === 'change' ? plan.changes.map((c) => `${c.action} ${c.target}`) : []).toEqual(
      decision ? ['delete Pod shop/backoff'] : [],
    );
    expect(plan.warnings ?? []).toHaveLength(warnings);
  });
});
