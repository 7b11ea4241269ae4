import { chmodSync, chownSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { testNode, testSite } from '../../test/node/context.js';
import { BLOCK_BEGIN, BLOCK_END } from '../node/authorized-keys.js';
import { sshKeysStep } from './ssh-keys.js';

const SITE_KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIN2MDNYgUAS0GPwsfH1wH03JkbZ7nJRPsI4u93oUxWLa support@store42';
const FACTORY_LINE = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFactoryKeyFactoryKeyFactoryKeyFactoryKey0 factory@line-3';

describe('ssh-keys', () => {
  it('plans the site key as data, keeping the factory key, then writes it 0600 in a 0700 folder', async () => {
    const node = testNode({ site: testSite({ sshAuthorizedKeys: [SITE_KEY] }) });
    // a careless factory: .ssh left 0755 and, when these tests run as root, the file root-owned
    const asRoot = process.getuid?.() === 0;
    chmodSync(path.join(node.root, 'home/core/.ssh'), 0o755);
    if (asRoot) chownSync(path.join(node.root, 'home/core/.ssh/authorized_keys'), 0, 0);
    const plan = await sshKeysStep.plan(node.ctx);
    expect(plan).toEqual({
      action: 'change',
      summary: 'authorize 1 site key(s) for core',
      changes: [
        { action: 'update', target: '/home/core/.ssh', summary: 'mode 0755, want 0700' },
        {
          action: 'update',
          target: '/home/core/.ssh/authorized_keys',
          summary: `1 site key(s) for core; other lines kept (content differs${asRoot ? '; owner 0:0, want 1000:1000' : ''})`,
          diff: ['+ ssh-ed25519 SHA256:pMAnO/hKS7fuFwyHydWHK86OS+feyFRe1fwof39mPXw support@store42'],
        },
      ],
    });
    const state = await node.run([sshKeysStep]);
    expect(state.steps['ssh-keys']?.status).toBe('done');
    const file = path.join(node.root, 'home/core/.ssh/authorized_keys');
    expect(readFileSync(file, 'utf8')).toBe(`${FACTORY_LINE}\n${BLOCK_BEGIN}\n${SITE_KEY}\n${BLOCK_END}\n`);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(path.dirname(file)).mode & 0o777).toBe(0o700);
    if (asRoot)
      expect([statSync(file).uid, statSync(file).gid, statSync(path.dirname(file)).uid]).toEqual([1000, 1000, 1000]);
    expect(await sshKeysStep.plan(node.ctx)).toEqual({
      action: 'noop',
      reason: '1 site key(s) already authorized for core',
    });
  });

  it('repairs a folder mode that drifted, and a key removed by hand', async () => {
    const node = testNode({ site: testSite({ sshAuthorizedKeys: [SITE_KEY] }) });
    await node.run([sshKeysStep]);
    const dir = path.join(node.root, 'home/core/.ssh');
    await node.ctx.fs.chmod('/home/core/.ssh', 0o755);
    writeFileSync(path.join(dir, 'authorized_keys'), `${FACTORY_LINE}\n`);
    const plan = await sshKeysStep.plan(node.ctx);
    expect(plan.action === 'change' && plan.changes.map((c) => `${c.action} ${c.target}: ${c.summary}`)).toEqual([
      'update /home/core/.ssh: mode 0755, want 0700',
      'update /home/core/.ssh/authorized_keys: 1 site key(s) for core; other lines kept (content differs)',
    ]);
    await node.run([sshKeysStep]);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(readFileSync(path.join(dir, 'authorized_keys'), 'utf8')).toContain(SITE_KEY);
  });

  it('uses the home folder /etc/passwd gives core, and does nothing without keys', async () => {
    const node = testNode({ site: testSite({ sshAuthorizedKeys: [SITE_KEY] }) });
    writeFileSync(path.join(node.root, 'etc/passwd'), 'core:x:1000:1000:CoreOS Admin:/var/home/core:/bin/bash\n');
    await node.run([sshKeysStep]);
    expect(readFileSync(path.join(node.root, 'var/home/core/.ssh/authorized_keys'), 'utf8')).toContain(SITE_KEY);
    expect(await sshKeysStep.plan({ ...node.ctx, site: testSite() })).toMatchObject({
      action: 'change',
      summary: 'authorize 0 site key(s) for core',
    });
    expect(await sshKeysStep.plan({ ...testNode().ctx, site: testSite() })).toEqual({
      action: 'noop',
      reason: 'the site-config has no SSH keys',
    });
  });

  it('refuses a key line that would smuggle in another line, naming the field', async () => {
    const node = testNode({
      site: testSite({ sshAuthorizedKeys: [SITE_KEY, `${SITE_KEY}\ncommand="rm -rf /" ssh-rsa AAAA`] }),
    });
    await expect(sshKeysStep.plan(node.ctx)).rejects.toMatchObject({
      exitCode: 2,
      findings: [{ path: '$.spec.sshAuthorizedKeys[1]' }],
    });
  });
});
