import { describe, expect, it } from 'vitest';
import { movedHost } from './routes.js';

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
