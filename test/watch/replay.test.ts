/**
 * A recording made on the real test API (test/watch/record-fixture.ts: a relocated store with a
 * catalog pulled by tag under digest-only mirrors, a layering build that still pushes to the factory
 * registry, Cluster API of both groups with its owners, stored versions, webhooks, conditions and
 * migrations, ...) replays to exactly the findings it produced, from the command line and without a
 * cluster.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { EMPTY_CONTEXT } from '../../src/watch/model.js';
import { readRecording, replay } from '../../src/watch/record.js';
import { REPO } from '../node/context.js';
import { runAgent } from '../node/cli.js';
import { CAPI_FINDINGS } from './capi-scenario.js';

const FIXTURE = path.join(REPO, 'test/watch/fixtures/relocated-store.jsonl');
const EXPECTED = JSON.parse(
  readFileSync(path.join(REPO, 'test/watch/fixtures/relocated-store.findings.json'), 'utf8'),
) as { health: string; findings: { component: string; object: string; severity: string; reason: string }[] };

describe('replay of a recorded watch', () => {
  it('reproduces every finding, with the recorded context and times', async () => {
    const { findings } = replay(await readRecording(FIXTURE), EMPTY_CONTEXT);
    expect(findings).toEqual(EXPECTED.findings);
  });

  it('escalates what held until the later evaluation: the catalog failing for six minutes is an error', () => {
    expect(EXPECTED.findings).toContainEqual(
      expect.objectContaining({ object: 'CatalogSource openshift-marketplace/redhat-operators', severity: 'error' }),
    );
  });

  it('holds the Cluster API cases: each broken object of both groups, once', () => {
    const capi = EXPECTED.findings
      .filter((f) => f.component === 'capi')
      .map((f) => `${f.severity} ${f.object}: ${f.reason}`);
    expect(capi.sort()).toEqual([...CAPI_FINDINGS].sort());
  });

  it('watch --replay prints the same and exits 1 for the errors, without a cluster', () => {
    const r = runAgent(['watch', '--replay', FIXTURE, '-o', 'json', '--kubeconfig', '/nonexistent'], {});
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toEqual(EXPECTED);
  });

  it('refuses a recording that is not there', () => {
    const r = runAgent(['watch', '--replay', '/nonexistent/events.jsonl'], {});
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--replay: cannot read /nonexistent/events.jsonl');
  });
});
