import { readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { testNode, testSite } from '../../test/node/context.js';
import { renderPlan } from '../cli/render-plan.js';
import { KUBELET_AUTH_FILE, nodePullSecretStep } from './node-pull-secret.js';

const SECRET = 'c3RvcmU0MjpzM2NyZXQtcGFzc3dvcmQ=';
const site = (policy: 'replace' | 'merge') =>
  testSite({
    pullSecret: { auths: { 'registry.store42.example.com:5000': { auth: SECRET, email: 'ops@store42.example.com' } } },
    pullSecretPolicy: policy,
  });
const FACTORY = {
  auths: {
    'quay.io': { auth: 'ZmFjdG9yeTpmYWN0b3J5LXRva2Vu' },
    'registry.store42.example.com:5000': { auth: 'b2xkOm9sZA==' },
  },
};

describe('node-pull-secret', () => {
  it('writes the site credentials 0600 and shows only how many registries, in every plan format', async () => {
    const node = testNode({ site: site('replace') });
    const plan = await nodePullSecretStep.plan(node.ctx);
    expect(plan).toEqual({
      action: 'change',
      summary: "replace the node's registry credentials",
      changes: [{ action: 'create', target: KUBELET_AUTH_FILE, summary: '<redacted: 1 registry>, replace; missing' }],
    });
    for (const format of ['text', 'json', 'yaml'] as const) {
      const shown = renderPlan(
        { site: 'store-test', siteConfig: 'x', steps: [{ step: 'node-pull-secret', ...plan }] },
        format,
      );
      expect(shown).not.toContain(SECRET);
      expect(shown).toContain('<redacted: 1 registry>');
    }
    await node.run([nodePullSecretStep]);
    const file = path.join(node.root, KUBELET_AUTH_FILE);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual(site('replace').pullSecret);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(node.logs.join('\n')).not.toContain(SECRET);
    expect(await nodePullSecretStep.plan(node.ctx)).toEqual({
      action: 'noop',
      reason: `${KUBELET_AUTH_FILE} already holds the site's credentials (<redacted: 1 registry>)`,
    });
  });

  it('merges into the credentials already there, the site winning for its own registry', async () => {
    const node = testNode({ site: site('merge') });
    writeFileSync(path.join(node.root, KUBELET_AUTH_FILE), JSON.stringify(FACTORY), { mode: 0o600 });
    const plan = await nodePullSecretStep.plan(node.ctx);
    expect(plan.action === 'change' && plan.changes[0]).toMatchObject({
      action: 'update',
      diff: ['- <redacted: 2 registries>', '+ <redacted: 2 registries>'],
    });
    await node.run([nodePullSecretStep]);
    expect(JSON.parse(readFileSync(path.join(node.root, KUBELET_AUTH_FILE), 'utf8')).auths).toEqual({
      'quay.io': FACTORY.auths['quay.io'],
      'registry.store42.example.com:5000': site('merge').pullSecret!.auths['registry.store42.example.com:5000'],
    });
  });

  it('takes a file with other spacing but the same content as done, and repairs a mode that drifted', async () => {
    const node = testNode({ site: site('replace') });
    const file = path.join(node.root, KUBELET_AUTH_FILE);
    writeFileSync(file, JSON.stringify(site('replace').pullSecret, null, 4), { mode: 0o600 });
    expect(await nodePullSecretStep.plan(node.ctx)).toMatchObject({ action: 'noop' });
    await node.ctx.fs.chmod(KUBELET_AUTH_FILE, 0o644);
    expect(await nodePullSecretStep.plan(node.ctx)).toMatchObject({
      action: 'change',
      changes: [{ summary: '<redacted: 1 registry>, replace; mode 0644, want 0600' }],
    });
  });

  it('refuses to merge into a file that is not JSON, without quoting it', async () => {
    const node = testNode({ site: site('merge') });
    writeFileSync(path.join(node.root, KUBELET_AUTH_FILE), `{"auths": {"quay.io": {"auth": "${SECRET}"`);
    const plan = await nodePullSecretStep.plan(node.ctx);
    expect(plan).toEqual({
      action: 'conflict',
      reason: `${KUBELET_AUTH_FILE} is not valid JSON, so the site's registries cannot be merged into it`,
    });
    await expect(node.run([nodePullSecretStep])).rejects.toMatchObject({ exitCode: 3 });
  });

  it('does nothing when the site-config has no pull secret', async () => {
    expect(await nodePullSecretStep.plan(testNode().ctx)).toEqual({
      action: 'noop',
      reason: 'the site-config has no pull secret',
    });
  });
});
