import { describe, expect, it } from 'vitest';
import type { Site } from '../config/site.js';
import type { Change } from '../engine/step.js';
import { SITE_HOSTNAME_ANNOTATION } from '../node/node-name.js';
import { nodeIdentityStep, type NodeIdentityDecision, type NodeIdentityView } from './node-identity.js';

const node = (name: string, parts: { labels?: Record<string, string>; annotations?: Record<string, string> } = {}) => ({
  apiVersion: 'v1',
  kind: 'Node',
  metadata: { name, ...parts },
});
const site = (hostname?: string) => ({ ...(hostname !== undefined && { hostname }) }) as Site;
const targets = (changes: Change[] | undefined) => (changes ?? []).map((c) => `${c.action} ${c.target}`);

describe('node-identity decisions, on plain views', () => {
  const master = { key: 'node-role.kubernetes.io/master', effect: 'NoSchedule' };
  const renamed = (former?: NonNullable<NodeIdentityView['rename']>['former']): NodeIdentityView => ({
    name: 'store-0042',
    node: node('store-0042', { annotations: { [SITE_HOSTNAME_ANNOTATION]: 'store-0042' } }),
    rename: {
      from: 'sno-factory',
      to: 'store-0042',
      ...(former && { former }),
      operators: ['Etcd'],
      secrets: ['etcd-peer'],
    },
  });
  it.each<[string, NodeIdentityView, Site, string, string[], NodeIdentityDecision?]>([
    ['no hostname in the site-config', { name: 'sno-factory', node: node('sno-factory') }, site(), 'noop', []],
    [
      'the kept name gets the site hostname',
      { name: 'sno-factory', node: node('sno-factory') },
      site('store-0042'),
      'change',
      [`set Node sno-factory annotation ${SITE_HOSTNAME_ANNOTATION}`],
      { node: 'sno-factory', hostname: 'store-0042' },
    ],
    [
      'the annotation already there',
      { name: 'sno-factory', node: node('sno-factory', { annotations: { [SITE_HOSTNAME_ANNOTATION]: 'store-0042' } }) },
      site('store-0042'),
      'noop',
      [],
    ],
    [
      'kubelet has not registered the Node yet',
      { name: 'sno-factory' },
      site('store-0042'),
      'change',
      [`set Node sno-factory annotation ${SITE_HOSTNAME_ANNOTATION}`],
      { node: 'sno-factory', hostname: 'store-0042' },
    ],
    [
      'after a rename: the former Node carried over, then deleted',
      renamed({
        ...node('sno-factory', { labels: { 'node-role.kubernetes.io/master': '', 'kubernetes.io/hostname': 'x' } }),
        spec: { taints: [master, { key: 'node.kubernetes.io/unreachable', effect: 'NoExecute' }] },
      }),
      site('store-0042'),
      'change',
      [
        'set Node store-0042 label node-role.kubernetes.io/master',
        'set Node store-0042 taints',
        'create Secret openshift-etcd/etcd-peer-store-0042',
        'update Etcd cluster',
        'delete Node sno-factory',
      ],
      {
        node: 'store-0042',
        rename: {
          from: 'sno-factory',
          to: 'store-0042',
          // kubelet's own label and the former's lifecycle taint stay behind
          carry: { labels: { 'node-role.kubernetes.io/master': '' }, taints: [master] },
          secrets: ['etcd-peer'],
          operators: ['Etcd'],
          deleteFormer: true,
        },
        hostname: 'store-0042',
      },
    ],
    [
      'after a rename whose former Node is gone: the secrets and statuses still move',
      renamed(),
      site('store-0042'),
      'change',
      ['create Secret openshift-etcd/etcd-peer-store-0042', 'update Etcd cluster'],
      {
        node: 'store-0042',
        rename: {
          from: 'sno-factory',
          to: 'store-0042',
          secrets: ['etcd-peer'],
          operators: ['Etcd'],
          deleteFormer: false,
        },
        hostname: 'store-0042',
      },
    ],
  ])('%s', (_, view, s, action, changes, decision) => {
    const plan = nodeIdentityStep.plan(view, s);
    expect(plan.action).toBe(action);
    expect(targets(plan.action === 'change' ? plan.changes : undefined)).toEqual(changes);
    expect(plan.action === 'change' ? plan.decision : undefined).toEqual(decision);
  });
});
