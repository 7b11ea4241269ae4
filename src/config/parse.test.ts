/** Parsing: a document the schema cannot read is refused, its findings named where the value came from. */
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../base/errors.js';
import type { Finding } from '../base/findings.js';
import { MANIFEST_FILE } from './ibi/seed-reconfiguration.js';
import { parseConfig, relabelFor } from './parse.js';

const finding: Finding = { severity: 'error', path: '$.spec.baseDomain', message: 'Required' };

describe('relabelFor', () => {
  it('keeps a native finding as it is', () => expect(relabelFor('native')(finding)).toEqual(finding));

  it("names a translated finding on manifest.json's field", () =>
    expect(relabelFor('ibi')(finding)).toEqual({
      ...finding,
      path: `${MANIFEST_FILE}: $.base_domain ($.spec.baseDomain)`,
    }));
});

describe('parseConfig', () => {
  it('refuses (exit 2) a document the schema cannot read, with every finding', () => {
    const findings: Finding[] = [];
    let err: unknown;
    try {
      parseConfig({ apiVersion: 'sno-relocate/v1' }, relabelFor('native'), findings);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect(err).toMatchObject({ exitCode: 2 });
    expect((err as ConfigError).findings).toEqual(findings);
    expect(findings.length).toBeGreaterThan(0);
  });
});
