import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  linkSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { testNode, testSite } from '../../test/node/context.js';
import { ConfigError, RefusedError } from '../base/errors.js';
import { BLOCK_BEGIN, BLOCK_END } from '../node/authorized-keys.js';
import { sshKeysStep } from './ssh-keys.js';
import { planOf } from '../engine/engine.js';

const SITE_KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIN2MDNYgUAS0GPwsfH1wH03JkbZ7nJRPsI4u93oUxWLa support@store42';
const FACTORY_LINE = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFactoryKeyFactoryKeyFactoryKeyFactoryKey0 factory@line-3';

describe('ssh-keys', () => {
  it('plans the site key as data, keeping the factory key, then writes it 0600 in a 0700 folder', async () => {
    const node = testNode({ site: testSite({ sshAuthorizedKeys: [SITE_KEY] }) });
    // a careless factory: .ssh left 0755 and, when these tests run as root, the file root-owned
    const asRoot = process.getuid?.() === 0;
    chmodSync(path.join(node.root, 'home/core/.ssh'), 0o755);
    if (asRoot) chownSync(path.join(node.root, 'home/core/.ssh/authorized_keys'), 0, 0);
    const plan = await planOf(sshKeysStep, node.ctx);
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
    expect(await planOf(sshKeysStep, node.ctx)).toEqual({
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
    const plan = await planOf(sshKeysStep, node.ctx);
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
    expect(await planOf(sshKeysStep, { ...node.ctx, site: testSite() })).toMatchObject({
      action: 'change',
      summary: 'authorize 0 site key(s) for core',
    });
    expect(await planOf(sshKeysStep, { ...testNode().ctx, site: testSite() })).toEqual({
      action: 'noop',
      reason: 'the site-config has no SSH keys',
    });
  });

  it('refuses a key line that would smuggle in another line, naming the field', async () => {
    const node = testNode({
      site: testSite({ sshAuthorizedKeys: [SITE_KEY, `${SITE_KEY}\ncommand="rm -rf /" ssh-rsa AAAA`] }),
    });
    await expect(planOf(sshKeysStep, node.ctx)).rejects.toMatchObject({
      exitCode: 2,
      findings: [{ path: '$.spec.sshAuthorizedKeys[1]' }],
    });
  });
});

describe('ssh-keys in a hostile home folder', () => {
  const asRoot = process.getuid?.() === 0;
  const setup = () => {
    const node = testNode({ site: testSite({ sshAuthorizedKeys: [SITE_KEY] }) });
    const ssh = path.join(node.root, 'home/core/.ssh');
    // root's own things, which core must never get to read or own
    const secret = path.join(node.root, 'root-only');
    mkdirSync(secret, { mode: 0o700 });
    writeFileSync(path.join(secret, 'shadow'), 'root:$6$secret-hash:19000::::::\n', { mode: 0o600 });
    return { node, ssh, secret };
  };
  const refusal = async (node: ReturnType<typeof testNode>, named: string, why: string) => {
    for (const attempt of [planOf(sshKeysStep, node.ctx), node.run([sshKeysStep])]) {
      const err = await attempt.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(RefusedError);
      expect((err as Error).message).toBe(`refusing to use ${named}: ${why}; nothing was written there`);
    }
  };

  it('refuses ~/.ssh as a link to another folder, leaving that folder as it was', async () => {
    const { node, ssh, secret } = setup();
    rmSync(ssh, { recursive: true });
    symlinkSync(secret, ssh);
    await refusal(node, '/home/core/.ssh', 'it is a symbolic link, not a folder');
    expect(statSync(secret).mode & 0o777).toBe(0o700);
    expect(statSync(secret).uid).toBe(process.getuid?.());
    expect(readdirSync(secret)).toEqual(['shadow']);
  });

  it('refuses authorized_keys as a link to a root-only file, never copying it', async () => {
    const { node, ssh, secret } = setup();
    rmSync(path.join(ssh, 'authorized_keys'));
    symlinkSync(path.join(secret, 'shadow'), path.join(ssh, 'authorized_keys'));
    await refusal(node, '/home/core/.ssh/authorized_keys', 'it is a symbolic link');
    expect(readlinkSync(path.join(ssh, 'authorized_keys'))).toBe(path.join(secret, 'shadow'));
    expect(readdirSync(ssh)).toEqual(['authorized_keys']);
  });

  it('refuses authorized_keys as a hard link to a root-only file', async () => {
    const { node, ssh, secret } = setup();
    rmSync(path.join(ssh, 'authorized_keys'));
    linkSync(path.join(secret, 'shadow'), path.join(ssh, 'authorized_keys'));
    await refusal(node, '/home/core/.ssh/authorized_keys', 'it has 2 names (a hard link to another file)');
  });

  it('refuses authorized_keys as a FIFO at once, instead of hanging before kubelet starts', async () => {
    const { node, ssh } = setup();
    rmSync(path.join(ssh, 'authorized_keys'));
    execFileSync('mkfifo', [path.join(ssh, 'authorized_keys')]);
    await refusal(node, '/home/core/.ssh/authorized_keys', 'it is a FIFO, not a regular file');
  });

  it.runIf(asRoot)('refuses a folder or a file that another user owns', async () => {
    const { node, ssh } = setup();
    chownSync(path.join(ssh, 'authorized_keys'), 4242, 4242);
    await refusal(node, '/home/core/.ssh/authorized_keys', 'owned by uid 4242, neither core nor root');
    chownSync(path.join(ssh, 'authorized_keys'), 1000, 1000);
    chownSync(ssh, 4242, 4242);
    await refusal(node, '/home/core/.ssh', 'owned by uid 4242, neither core nor root');
  });
});

describe('ssh-keys decisions', () => {
  const core = { uid: 1000, gid: 1000, home: '/var/home/core' };
  const written = `${BLOCK_BEGIN}\n${SITE_KEY}\n${BLOCK_END}\n`;
  const site = (keys: string[]) => testSite({ sshAuthorizedKeys: keys });
  it.each([
    ['no keys and no file', {}, [], 'noop', []],
    [
      'no keys, a file of the factory',
      { authorizedKeys: { content: `${FACTORY_LINE}\n`, mode: 0o600 } },
      [],
      'noop',
      [],
    ],
    [
      'a key, no account, nothing there',
      {},
      [SITE_KEY],
      'change',
      ['create /home/core/.ssh', 'create /home/core/.ssh/authorized_keys'],
    ],
    [
      'a key, in place under the account home',
      { user: core, dirMode: 0o700, authorizedKeys: { content: written, mode: 0o600 } },
      [SITE_KEY],
      'noop',
      [],
    ],
    [
      'a key in place, the file 0644',
      { user: core, dirMode: 0o700, authorizedKeys: { content: written, mode: 0o644 } },
      [SITE_KEY],
      'change',
      ['update /var/home/core/.ssh/authorized_keys'],
    ],
    [
      'an earlier site key to take away',
      { user: core, dirMode: 0o700, authorizedKeys: { content: written, mode: 0o600 } },
      [],
      'change',
      ['update /var/home/core/.ssh/authorized_keys'],
    ],
  ] as const)('%s: %s', (_, view, keys, action, changes) => {
    const plan = sshKeysStep.plan(view, site([...keys]));
    expect(plan.action).toBe(action);
    expect(plan.action === 'change' ? plan.changes.map((c) => `${c.action} ${c.target}`) : []).toEqual(changes);
  });

  it('refuses a key line with a newline in it, naming the field', () => {
    expect(() => sshKeysStep.plan({}, site([`${SITE_KEY}\nssh-rsa AAAA evil`]))).toThrow(ConfigError);
  });
});
