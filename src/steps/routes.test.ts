import { describe, expect, it } from 'vitest';
import { testSite } from '../../test/node/context.js';
import { movedHost, routesStep, targetHost } from './routes.js';

describe('movedHost', () => {
  const old = ['apps.sno.factory.example.com', 'apps.sno.store42.example.com'];
  it.each([
    [
      'console-openshift-console.apps.sno.factory.example.com',
      'console-openshift-console.apps.sno.store77.example.com',
    ],
    ['a.b.apps.sno.store42.example.com', 'a.b.apps.sno.store77.example.com'],
    ['shop.example.net', undefined],
    ['apps.sno.factory.example.com', undefined],
    ['xapps.sno.factory.example.com', undefined],
    ['apps.sno.factory.example.com.evil.net', undefined],
  ])('%s -> %s', (host, want) => {
    expect(movedHost(host, old, 'apps.sno.store77.example.com')).toBe(want);
  });
});

describe('targetHost', () => {
  const old = ['apps.sno.factory.example.com'];
  const NEW = 'apps.sno.store77.example.com';
  const route = (namespace: string, name: string, host: string, generated = false) => ({
    apiVersion: 'route.openshift.io/v1',
    kind: 'Route',
    metadata: {
      namespace,
      name,
      ...(generated && { annotations: { 'openshift.io/host.generated': 'true' } }),
    },
    spec: { host },
  });
  it.each([
    [
      'a monitoring route',
      route('openshift-monitoring', 'thanos-querier', `thanos-querier-openshift-monitoring.${old[0]}`, true),
      `thanos-querier-openshift-monitoring.${NEW}`,
    ],
    [
      'a generated host under a domain no longer known',
      route('shop', 'web', 'web-shop.apps.lab.example.org', true),
      `web-shop.${NEW}`,
    ],
    ['a generated route given a custom host later', route('shop', 'web', 'www.shop.example.net', true), undefined],
    ['a set host under the old domain', route('shop', 'web', `store.${old[0]}`), `store.${NEW}`],
    ['a custom host', route('shop', 'web', 'shop.example.net'), undefined],
    ['already moved', route('shop', 'web', `web-shop.${NEW}`, true), undefined],
    [
      'the console, moved by its operator',
      route('openshift-console', 'console', `console-openshift-console.${old[0]}`),
      undefined,
    ],
    [
      'the OAuth route, moved by its operator',
      route('openshift-authentication', 'oauth-openshift', `oauth-openshift.${old[0]}`),
      undefined,
    ],
    [
      'the canary, left to its operator',
      route('openshift-ingress-canary', 'canary', `canary-openshift-ingress-canary.${old[0]}`),
      undefined,
    ],
  ])('%s', (_name, r, want) => {
    expect(targetHost(r, old, NEW)).toBe(want);
  });
});

describe('routes decisions', () => {
  const route = (namespace: string, name: string, host: string) => ({
    apiVersion: 'route.openshift.io/v1',
    kind: 'Route',
    metadata: { namespace, name },
    spec: { host },
  });
  const view = (routes: ReturnType<typeof route>[]) => ({
    routes,
    newDomain: 'apps.sno.store77.example.com',
    oldDomains: ['apps.sno.factory.example.com'],
  });
  const ref = (namespace: string, name: string) => ({
    apiVersion: 'route.openshift.io/v1',
    kind: 'Route',
    namespace,
    name,
  });
  it('decides one host patch per route it moves, and nothing for the others', () => {
    const plan = routesStep.plan(
      view([
        route('shop', 'web', 'web.apps.sno.factory.example.com'),
        route('shop', 'own', 'shop.example.net'),
        route('shop', 'api', 'api.v2.apps.sno.factory.example.com'),
      ]),
      testSite(),
    );
    expect(plan.action === 'change' && plan.decision).toEqual({
      moves: [
        {
          route: ref('shop', 'web'),
          from: 'web.apps.sno.factory.example.com',
          to: 'web.apps.sno.store77.example.com',
        },
        {
          route: ref('shop', 'api'),
          from: 'api.v2.apps.sno.factory.example.com',
          to: 'api.v2.apps.sno.store77.example.com',
        },
      ],
    });
  });
  it.each([
    ['no routes', [], 'noop', []],
    [
      'a shop route under the old domain',
      [route('shop', 'web', 'web.apps.sno.factory.example.com')],
      'change',
      ['+ spec.host: web.apps.sno.store77.example.com'],
    ],
    ['a custom host', [route('shop', 'web', 'shop.example.net')], 'noop', []],
    ['already moved', [route('shop', 'web', 'web.apps.sno.store77.example.com')], 'noop', []],
    [
      "an operator's route",
      [route('openshift-console', 'console', 'console-openshift-console.apps.sno.factory.example.com')],
      'noop',
      [],
    ],
  ] as const)('%s', (_, routes, action, hosts) => {
    const plan = routesStep.plan(view([...routes]), testSite());
    expect(plan.action).toBe(action);
    expect(plan.action === 'change' ? plan.changes.map((c) => c.diff![1]) : []).toEqual(hosts);
    expect(plan.action === 'change' ? plan.decision.moves.map((m) => `+ spec.host: ${m.to}`) : []).toEqual(hosts);
  });
});
