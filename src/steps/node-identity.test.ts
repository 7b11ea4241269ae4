import { describe, expect, it } from 'vitest';
import type { Site } from '../config/site.js';
import type { Change } from '../engine/step.js';
import { SITE_HOSTNAME_ANNOTATION } from '../node/node-name.js';
import { nodeIdentityStep, type NodeIdentityView } from './node-identity.js';

const node = (name: string, parts: { labels?: Record<string, string>; annotations?: Record<string, string> } = {}) => ({
  apiVersion: 'v1',
  kind: 'Node',
  metadata: { name, ...parts },
});
const site = (hostname?: string) => ({ ...(hostname !== undefined && { hostname }) }) as Site;
const targets = (changes: Change[] | undefined) => (changes ?? []).map((c) => `${c.action} ${c.target}`);

describe('node-identity decisions, on plain views', () => {
  it.each<[string, NodeIdentityView, Site, string, string[]]>([
    ['no hostname in the site-config', { name: 'sno-factory', node: node('sno-factory') }, site(), 'noop', []],
    [
      'the kept name gets the site hostname',
      { name: 'sno-factory', node: node('sno-factory') },
      site('store-0042'),
      'change',
      [`set Node sno-factory annotation ${SITE_HOSTNAME_ANNOTATION}`],
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
    ],
    [
      'after a rename: the former Node carried over, then deleted',
      {
        name: 'store-0042',
        node: node('store-0042', { annotations: { [SITE_HOSTNAME_ANNOTATION]: 'store-0042' } }),
        rename: {
          from: 'sno-factory',
          to: 'store-0042',
          former: {
            ...node('sno-factory', { labels: { 'node-role.kubernetes.io/master': '', 'kubernetes.io/hostname': 'x' } }),
            spec: { taints: [{ key: 'node-role.kubernetes.io/master', effect: 'NoSchedule' }] },
          },
          operators: ['Etcd'],
          secrets: ['etcd-peer'],
        },
      },
      site('store-0042'),
      'change',
      [
        'set Node store-0042 label node-role.kubernetes.io/master',
        'set Node store-0042 taints',
        'create Secret openshift-etcd/etcd-peer-store-0042',
        'update Etcd cluster',
        'delete Node sno-factory',
      ],
    ],
  ])('%s', (_, view, s, action, changes) => {
    const plan = nodeIdentityStep.plan(view, s);
    expect(plan.action).toBe(action);
    expect(targets(plan.action === 'change' ? plan.changes : undefined)).toEqual(changes);
  });
});
