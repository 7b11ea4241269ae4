/** docs/rollouts.md's table of which write rolls out what is bench/rollouts-table.ts, the bench's source too. */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROLLOUT_KINDS } from '../../src/kube/rollout-costs.js';
import { WHOLE_SITE_WRITES } from '../../bench/rollouts-relocation.js';
import { minimumRollouts, rolloutTableMarkdown } from '../../bench/rollouts-table.js';
import { REPO } from '../helpers/cli.js';

const doc = readFileSync(path.join(REPO, 'docs/rollouts.md'), 'utf8');

describe('docs/rollouts.md', () => {
  it('holds the table of which write rolls out what as bench/rollouts-table.ts has it', () => {
    expect(doc).toContain(`\n${rolloutTableMarkdown()}\n`);
  });

  it("gives a whole site's minimum as the bench derives it from the table: each component it touches once", () => {
    expect(minimumRollouts(WHOLE_SITE_WRITES, ROLLOUT_KINDS)).toEqual({
      'kube-apiserver': 1,
      'openshift-apiserver': 1,
      'oauth-server': 1,
      router: 1,
      reboot: 1,
    });
    expect(minimumRollouts(['clientCA', 'pullSecretMirrors'], ROLLOUT_KINDS)).toEqual({
      'kube-apiserver': 0,
      'openshift-apiserver': 0,
      'oauth-server': 0,
      router: 0,
      reboot: 0,
    });
  });
});
