import { describe, expect, it } from 'vitest';
import { diffLines } from './openshift.js';

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
