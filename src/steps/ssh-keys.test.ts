/**
 * The ssh-keys step against the test systemd on a private dbus-daemon: the site's keys in the
 * agent's file outside core's home, sshd told about it by a drop-in and restarted, core's own
 * authorized_keys left as it is but for an earlier layout's block, which moves out.
 */
import { execFileSync } from 'node:child_process';
import {
  chownSync,
  existsSync,
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
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestBus } from '../../test/dbus/bus.js';
import { STATE_DIR, testNode, testSite } from '../../test/node/context.js';
import { ConfigError, RefusedError } from '../base/errors.js';
import { BLOCK_BEGIN, BLOCK_END } from '../node/authorized-keys.js';
import { KEYS_FILE, SSHD_DROP_IN, type SshKeysView, sshKeysStep } from './ssh-keys.js';
import { planOf, verifyStep } from '../engine/engine.js';

const SITE_KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIN2MDNYgUAS0GPwsfH1wH03JkbZ7nJRPsI4u93oUxWLa support@store42';
const FACTORY_LINE = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFactoryKeyFactoryKeyFactoryKeyFactoryKey0 factory@line-3';
const asRoot = process.getuid?.() === 0;

let bus: Awaited<ReturnType<typeof startTestBus>>;
beforeAll(async () => {
  bus = await startTestBus();
  process.env.DBUS_SYSTEM_BUS_ADDRESS = bus.address;
});
afterAll(() => bus?.stop());

async function keysNode(keys: string[] = [SITE_KEY]) {
  const node = testNode({ site: testSite({ sshAuthorizedKeys: keys }), systemd: true });
  await bus.services.configure({ root: node.root });
  const at = (file: string) => path.join(node.root, file);
  return { node, at, read: (file: string) => readFileSync(at(file), 'utf8') };
}

const restarts = async () => (await bus.services.calls()).filter((c) => c.member === 'RestartUnit');

describe('ssh-keys', () => {
  it("puts the site's keys where sshd reads them and the machine-config daemon does not reach, core's file untouched", async () => {
    const { node, at, read } = await keysNode();
    const coreFile = 'home/core/.ssh/authorized_keys';
    const factory = read(coreFile);
    expect(await planOf(sshKeysStep, node.ctx)).toEqual({
      action: 'change',
      summary: 'authorize 1 site key(s) for core',
      changes: [
        {
          action: 'create',
          target: KEYS_FILE,
          summary: '1 site key(s) for core (mode 0644)',
          diff: ['+ ssh-ed25519 SHA256:pMAnO/hKS7fuFwyHydWHK86OS+feyFRe1fwof39mPXw support@store42'],
        },
        expect.objectContaining({ action: 'create', target: SSHD_DROP_IN }),
        {
          action: 'start',
          target: 'sshd.service',
          summary: 'restart over D-Bus, so that it reads the changed drop-in',
        },
      ],
      decision: {
        keysFile: expect.objectContaining({ path: KEYS_FILE, mode: 0o644, uid: 0, gid: 0 }),
        restartSshd: { files: [expect.objectContaining({ path: SSHD_DROP_IN, mode: 0o644, uid: 0, gid: 0 })] },
        remove: [],
        keys: 1,
      },
    });
    const state = await node.run([sshKeysStep]);
    expect(state.steps['ssh-keys']?.status).toBe('done');
    expect(read(KEYS_FILE).split('\n').slice(1)).toEqual([SITE_KEY, '']);
    expect(read(SSHD_DROP_IN)).toMatch(
      /^AuthorizedKeysFile \.ssh\/authorized_keys \/etc\/sno-relocate\/ssh\/%u\.authorized_keys$/m,
    );
    // sshd opens the file as core: world-readable, in folders that are not writable by others
    for (const p of [KEYS_FILE, SSHD_DROP_IN]) expect(statSync(at(p)).mode & 0o777).toBe(0o644);
    for (const dir of ['etc/sno-relocate', 'etc/sno-relocate/ssh']) expect(statSync(at(dir)).mode & 0o777).toBe(0o755);
    if (asRoot) expect([statSync(at(KEYS_FILE)).uid, statSync(at(KEYS_FILE)).gid]).toEqual([0, 0]);
    expect(read(coreFile)).toBe(factory);
    expect(await restarts()).toEqual([{ member: 'RestartUnit', args: ['sshd.service', 'replace'] }]);

    await bus.services.configure({ root: node.root });
    expect(await planOf(sshKeysStep, node.ctx)).toEqual({
      action: 'noop',
      reason: '1 site key(s) already authorized for core',
    });
    // another key: the file changes, sshd reads it at the next login without a restart
    const next = { ...node.ctx, site: testSite({ sshAuthorizedKeys: [SITE_KEY, FACTORY_LINE] }) };
    expect(await planOf(sshKeysStep, next)).toMatchObject({ changes: [{ action: 'update', target: KEYS_FILE }] });
    node.close();
  });

  it("moves the keys an earlier layout kept in core's authorized_keys, keeping the file's other lines", async () => {
    const { node, read } = await keysNode();
    const coreFile = 'home/core/.ssh/authorized_keys';
    writeFileSync(
      path.join(node.root, coreFile),
      `${FACTORY_LINE}\n${BLOCK_BEGIN}\n${SITE_KEY}\n${BLOCK_END}\n# added by hand\n`,
    );
    const plan = await planOf(sshKeysStep, node.ctx);
    expect(
      plan.action === 'change' && plan.changes.find((c) => c.target === '/home/core/.ssh/authorized_keys'),
    ).toEqual({
      action: 'update',
      target: '/home/core/.ssh/authorized_keys',
      summary: `the site's keys of an earlier layout moved out (to ${KEYS_FILE}); other lines kept`,
      diff: ['- ssh-ed25519 SHA256:pMAnO/hKS7fuFwyHydWHK86OS+feyFRe1fwof39mPXw support@store42'],
    });
    await node.run([sshKeysStep]);
    expect(read(coreFile)).toBe(`${FACTORY_LINE}\n# added by hand\n`);
    expect(read(KEYS_FILE)).toContain(SITE_KEY);
    node.close();
  });

  it('restarts sshd on the next run when a run was cut off between the drop-in and the restart', async () => {
    const { node, at } = await keysNode();
    await node.run([sshKeysStep]);
    writeFileSync(at(path.join(STATE_DIR, 'sshd-restart-pending')), 'sshd.service\n');
    await expect(verifyStep(sshKeysStep, node.ctx)).rejects.toThrow(
      'ssh-keys: still differs after apply: start sshd.service',
    );
    node.close();
  });

  it('puts the previous drop-in back when sshd does not restart with the new one', async () => {
    const { node, at } = await keysNode();
    await bus.services.configure({ root: node.root, units: { 'sshd.service': { startResult: 'failed' } } });
    await expect(node.run([sshKeysStep])).rejects.toThrow(
      "ssh-keys: sshd.service did not restart with the drop-in naming the site's keys file (failed)",
    );
    expect(existsSync(at(SSHD_DROP_IN))).toBe(false);
    node.close();
  });

  it("takes an earlier site's keys away when the site-config gives none, and has nothing to do on a node without", async () => {
    const { node, at } = await keysNode();
    await node.run([sshKeysStep]);
    const later = { ...node.ctx, site: testSite() };
    expect(await planOf(sshKeysStep, later)).toMatchObject({
      action: 'change',
      summary: 'authorize 0 site key(s) for core',
      changes: [
        { action: 'delete', target: KEYS_FILE },
        { action: 'delete', target: SSHD_DROP_IN },
        { action: 'start', target: 'sshd.service' },
      ],
    });
    await bus.services.configure({ root: node.root });
    const plan = sshKeysStep.plan(await sshKeysStep.survey(later), later.site);
    if (plan.action !== 'change') throw new Error('a change was planned above');
    expect(plan.decision).toEqual({ restartSshd: { files: [] }, remove: [KEYS_FILE], keys: 0 });
    await sshKeysStep.apply!(later, plan.decision);
    expect([existsSync(at(KEYS_FILE)), existsSync(at(SSHD_DROP_IN))]).toEqual([false, false]);
    node.close();
    expect(await planOf(sshKeysStep, testNode().ctx)).toEqual({
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
    expect(() =>
      sshKeysStep.plan(
        { files: {}, restartPending: false },
        testSite({ sshAuthorizedKeys: [`${SITE_KEY}\nssh-rsa AAAA evil`] }),
      ),
    ).toThrow(ConfigError);
  });
});

describe('ssh-keys in a hostile home folder', () => {
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
    expect(existsSync(path.join(node.root, KEYS_FILE))).toBe(false);
  };

  it('refuses ~/.ssh as a link to another folder, leaving that folder as it was', async () => {
    const { node, ssh, secret } = setup();
    rmSync(ssh, { recursive: true });
    symlinkSync(secret, ssh);
    await refusal(node, '/home/core/.ssh', 'it is a symbolic link, not a folder');
    expect(statSync(secret).mode & 0o777).toBe(0o700);
    expect(readdirSync(secret)).toEqual(['shadow']);
  });

  it('refuses authorized_keys as a link to a root-only file, never copying it', async () => {
    const { node, ssh, secret } = setup();
    rmSync(path.join(ssh, 'authorized_keys'));
    symlinkSync(path.join(secret, 'shadow'), path.join(ssh, 'authorized_keys'));
    await refusal(node, '/home/core/.ssh/authorized_keys', 'it is a symbolic link');
    expect(readlinkSync(path.join(ssh, 'authorized_keys'))).toBe(path.join(secret, 'shadow'));
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
  const site = testSite({ sshAuthorizedKeys: [SITE_KEY] });
  const keysFile = sshKeysStep.plan({ files: {}, restartPending: false }, site);
  const [written, dropIn] =
    keysFile.action === 'change' ? [keysFile.decision.keysFile!, keysFile.decision.restartSshd!.files[0]!] : [];
  const inPlace = {
    [KEYS_FILE]: { content: written!.content, mode: 0o644 },
    [SSHD_DROP_IN]: { content: dropIn!.content, mode: 0o644 },
  };
  const core = { uid: 1000, gid: 1000, home: '/var/home/core' };
  const oldLayout = { content: `${FACTORY_LINE}\n${BLOCK_BEGIN}\n${SITE_KEY}\n${BLOCK_END}\n`, mode: 0o600 };
  it.each<[string, Partial<SshKeysView>, string[], string, string[], unknown]>([
    [
      'nothing yet',
      {},
      [SITE_KEY],
      'change',
      ['create', 'create', 'start'],
      {
        keysFile: written,
        restartSshd: { files: [dropIn] },
        remove: [],
        keys: 1,
      },
    ],
    ['both in place', { files: inPlace }, [SITE_KEY], 'noop', [], undefined],
    [
      'the keys file alone changed: no restart',
      { files: { ...inPlace, [KEYS_FILE]: { content: 'old', mode: 0o644 } } },
      [SITE_KEY],
      'change',
      ['update'],
      { keysFile: written, remove: [], keys: 1 },
    ],
    [
      'in place, restart owed: sshd restarted with its drop-in, the keys file left',
      { files: inPlace, restartPending: true },
      [SITE_KEY],
      'change',
      ['start'],
      { restartSshd: { files: [dropIn] }, remove: [], keys: 1 },
    ],
    [
      'no keys, an earlier site',
      { files: inPlace },
      [],
      'change',
      ['delete', 'delete', 'start'],
      { restartSshd: { files: [] }, remove: [KEYS_FILE], keys: 0 },
    ],
    [
      "no keys, files that are not the agent's",
      { files: { [KEYS_FILE]: { content: 'by hand', mode: 0o644 } } },
      [],
      'noop',
      [],
      undefined,
    ],
    [
      "an earlier layout's block in core's authorized_keys",
      { files: inPlace, user: core, authorizedKeys: oldLayout },
      [SITE_KEY],
      'change',
      ['update'],
      {
        authorizedKeys: {
          path: '/var/home/core/.ssh/authorized_keys',
          content: `${FACTORY_LINE}\n`,
          mode: 0o600,
          uid: 1000,
          gid: 1000,
          userFolder: { name: 'core', uid: 1000, gid: 1000 },
        },
        remove: [],
        keys: 1,
      },
    ],
  ])('%s', (_, view, keys, action, changes, decision) => {
    const plan = sshKeysStep.plan({ files: {}, restartPending: false, ...view }, testSite({ sshAuthorizedKeys: keys }));
    expect(plan.action).toBe(action);
    expect(plan.action === 'change' ? plan.changes.map((c) => c.action) : []).toEqual(changes);
    expect(plan.action === 'change' ? plan.decision : undefined).toEqual(decision);
  });
});
