import { describe, expect, it } from 'vitest';
import { diffLines, domainsOf, siteHostsProblem } from './openshift.js';

describe('diffLines', () => {
  it('shows changed, added and removed leaves by path', () => {
    expect(
      diffLines(
        { domain: 'a', routes: [{ n: 1 }] },
        { domain: 'a', appsDomain: 'b', routes: [{ n: 2 }, { n: 3 }] },
        'spec',
      ),
    ).toEqual(['- spec.routes[0].n: 1', '+ spec.routes[0].n: 2', '+ spec.appsDomain: "b"', '+ spec.routes[1].n: 3']);
  });

  it('is empty for equal values and shows a creation as additions only', () => {
    expect(diffLines({ a: [1] }, { a: [1] })).toEqual([]);
    expect(diffLines(undefined, { a: 1 }, 'spec')).toEqual(['+ spec.a: 1']);
  });
});

describe('siteHostsProblem', () => {
  const base = (labels: number) => Array.from({ length: 4 }, () => 'a'.repeat(labels)).join('.');

  it('names the longest host and its length when it is over 253 characters', () => {
    expect(siteHostsProblem(domainsOf('sno', base(53)))).toBeUndefined();
    // downloads-openshift-console.apps.sno. and four labels of 55 with their dots
    expect(siteHostsProblem(domainsOf('sno', base(55)))).toMatch(
      /^downloads-openshift-console\.apps\.sno\.a+\.\.\. would be 260 characters, over the 253/,
    );
  });

  it('counts the cluster name', () => {
    expect(siteHostsProblem(domainsOf('x', base(53)))).toBeUndefined();
    expect(siteHostsProblem(domainsOf('long-cluster-name', base(53)))).toContain('would be 266 characters');
  });
});
