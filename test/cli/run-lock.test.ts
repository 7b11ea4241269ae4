/**
 * The run lock between two real processes of the built executable: a run waiting for a stick holds
 * it, a second run (or factory prepare or seal) refuses at once naming the holder, plan/validate/status
 * go on, and a lock whose
 * holder died (a kill, a power cut: another boot) is taken over.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { layFactoryNode } from '../fixtures/factory-node.js';
import { BINARY, EXAMPLE, runCli } from '../helpers/cli.js';

const work = mkdtempSync(path.join(tmpdir(), 'run-lock-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

function node(name: string) {
  const root = path.join(work, name);
  layFactoryNode(root);
  const state = path.join(root, 'var/lib/sno-relocate');
  return { root, lock: path.join(state, 'run.lock'), args: ['--root', root] };
}

/** A run that holds the lock while it waits for a site-config to appear. */
function waitingRun(args: string[]) {
  const child = spawn(BINARY, ['run', '--wait', '60', ...args], {
    env: { ...process.env, JOURNAL_STREAM: '', INVOCATION_ID: '' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, exited, log: () => stderr };
}

describe('the run lock', () => {
  it('makes a second run refuse at once with exit 3 naming the holder, while plan, validate and status go on', async () => {
    const n = node('held');
    const first = waitingRun(n.args);
    try {
      await vi.waitFor(() => expect(first.log()).toContain('waiting'), { timeout: 20_000, interval: 50 });
      const consoleFile = path.join(n.root, 'console');
      const second = runCli(['run', EXAMPLE, ...n.args, '--console', consoleFile]);
      expect(second.code).toBe(3);
      expect(second.stderr).toContain(`another run holds the lock (pid ${first.child.pid})`);
      expect(readFileSync(consoleFile, 'utf8')).toContain(
        `REFUSED: another run holds the lock (pid ${first.child.pid})`,
      );
      // the second run touched nothing: the first still holds the lock and no state was written
      expect(JSON.parse(readFileSync(n.lock, 'utf8'))).toMatchObject({ pid: first.child.pid });
      expect(existsSync(path.join(n.root, 'var/lib/sno-relocate/state.json'))).toBe(false);
      expect(runCli(['validate', EXAMPLE, ...n.args]).code).toBe(0);
      expect(runCli(['plan', EXAMPLE, ...n.args, '--only', 'ssh-keys']).code).toBe(0);
      expect(runCli(['status', ...n.args]).code).toBe(0);
    } finally {
      first.child.kill('SIGTERM');
      await first.exited;
    }
  });

  it('makes factory prepare and seal refuse beside a run, changing nothing in the state folder', async () => {
    const n = node('factory');
    const state = path.dirname(n.lock);
    mkdirSync(state, { recursive: true });
    // what a factory run left: seal would clear it, prepare would write beside it
    writeFileSync(path.join(state, 'state.json'), '{"factory":true}\n');
    const first = waitingRun(n.args);
    try {
      await vi.waitFor(() => expect(first.log()).toContain('waiting'), { timeout: 20_000, interval: 50 });
      const before = readdirSync(state).sort();
      for (const sub of ['prepare', 'seal']) {
        const r = runCli(['factory', sub, ...n.args]);
        expect([sub, r.code, r.stderr]).toEqual([
          sub,
          3,
          expect.stringContaining(`another run holds the lock (pid ${first.child.pid}); nothing was changed`),
        ]);
      }
      expect(readdirSync(state).sort()).toEqual(before);
      expect(readFileSync(path.join(state, 'state.json'), 'utf8')).toBe('{"factory":true}\n');
      expect(JSON.parse(readFileSync(n.lock, 'utf8'))).toMatchObject({ pid: first.child.pid });
    } finally {
      first.child.kill('SIGTERM');
      await first.exited;
    }
  });

  it('is taken over when its holder was killed, and released when a run ends', async () => {
    const n = node('killed');
    const first = waitingRun(n.args);
    await vi.waitFor(() => expect(first.log()).toContain('waiting'), { timeout: 20_000, interval: 50 });
    first.child.kill('SIGKILL');
    await first.exited;
    expect(existsSync(n.lock)).toBe(true);
    const next = runCli(['run', ...n.args, '--wait', '0']);
    expect(next.stderr).not.toContain('another run holds the lock');
    expect(next.code).toBe(0);
    expect(existsSync(n.lock)).toBe(false);
  });

  it('ends a run stopped while it waits (systemd stopping the unit) cleanly, with nothing changed', async () => {
    const n = node('stopped');
    const consoleFile = path.join(n.root, 'console');
    const first = waitingRun([...n.args, '--console', consoleFile]);
    await vi.waitFor(() => expect(first.log()).toContain('waiting'), { timeout: 20_000, interval: 50 });
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);
    expect(first.log()).toContain('stopped while waiting for a site-config (SIGTERM)');
    expect(readFileSync(consoleFile, 'utf8')).toContain('no site-config appeared; nothing was changed');
    expect(existsSync(n.lock)).toBe(false);
    expect(existsSync(path.join(n.root, 'var/lib/sno-relocate/state.json'))).toBe(false);
  });

  it('is taken over when it was left by a power cut (another boot), even if its pid is alive now', () => {
    const n = node('power-cut');
    mkdirSync(path.dirname(n.lock), { recursive: true });
    // pid 1 is alive on every boot: only the boot id tells the lock is stale
    writeFileSync(n.lock, JSON.stringify({ pid: 1, bootId: '00000000-0000-0000-0000-000000000000', startTime: '1' }));
    const next = runCli(['run', ...n.args, '--wait', '0']);
    expect(next.code).toBe(0);
    expect(existsSync(n.lock)).toBe(false);
  });
});
