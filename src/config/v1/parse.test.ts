import { describe, expect, it } from 'vitest';
import { baseDocument } from '../../../test/invalid/corpus.js';
import { parseSiteConfig } from './parse.js';

describe('parseSiteConfig', () => {
  it('turns unknown keys into warnings and still parses', () => {
    const doc = baseDocument();
    doc.spec.futureField = true;
    doc.metadata.labels = { a: 'b' };
    const result = parseSiteConfig(doc);
    expect(result.value?.metadata.name).toBe('store-0042');
    expect(result.findings).toEqual([
      { severity: 'warning', path: '$.metadata.labels', message: 'unknown key, ignored' },
      { severity: 'warning', path: '$.spec.futureField', message: 'unknown key, ignored' },
    ]);
  });

  it('keeps unknown nmstate keys: nmstate has many more than the agent reads', () => {
    const doc = baseDocument();
    doc.spec.network.nmstate.interfaces[0].ethtool = { feature: { tso: false } };
    const result = parseSiteConfig(doc);
    expect(result.findings).toEqual([]);
    expect(result.value?.spec.network.nmstate?.interfaces?.[0]).toHaveProperty('ethtool');
  });

  it('reports unknown keys and errors together', () => {
    const doc = baseDocument();
    doc.spec.extra = 1;
    doc.spec.baseDomain = 'BAD';
    const result = parseSiteConfig(doc);
    expect(result.value).toBeUndefined();
    expect(result.findings.map((f) => `${f.severity} ${f.path}`)).toEqual([
      'warning $.spec.extra',
      'error $.spec.baseDomain',
    ]);
  });

  it('says a missing field is required', () => {
    const doc = baseDocument();
    delete doc.spec.baseDomain;
    expect(parseSiteConfig(doc).findings).toContainEqual({
      severity: 'error',
      path: '$.spec.baseDomain',
      message: 'required (string)',
    });
  });

  it('quotes path segments that are not identifiers', () => {
    const doc = baseDocument();
    doc.spec.pullSecret.auths['quay.io'] = { auth: 42 };
    expect(parseSiteConfig(doc).findings[0]?.path).toBe('$.spec.pullSecret.auths["quay.io"].auth');
  });
});
