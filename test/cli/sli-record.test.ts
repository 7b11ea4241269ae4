/**
 * Every run is counted in the relocation figures (`sli.json`, served as metrics by the watcher):
 * refused at admission, invalid, refused by a step, failed and succeeded, each with where it
 * stopped and the class of its reason. The built executable, against a factory node, with the test
 * systemd on a private D-Bus where a step needs one.
 */
import { copyFileSync, cpSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestBus } from '../dbus/bus.js';
import { layFactoryNode } from '../fixtures/factory-node.js';
import { EXAMPLE, REPO, runCli } from '../helpers/cli.js';
import { stubEnvironment } from '../node/context.js';
import { factoryNetwork } from '../node/factory-network.js';

const STATE = 'var/lib/sno-relocate';

let bus: Awaited<ReturnType<typeof startTestBus>>;
beforeAll(async () => {
  bus = await startTestBus();
});
afterAll(() => bus?.stop());

function factoryRoot(): string {
  const root = mkdtempSync(path.join(tmpdir(), 'sli-record-'));
  layFactoryNode(root);
  return root;
}

interface Figures {
  runs: { succeeded: number; failed: number; refused: number };
  stepFailures: { [step: string]: { [reason: string]: number } };
  lastRun: { result: string; stoppedAt?: string; reason?: string; durationSeconds: number };
}
const record = (root: string) => JSON.parse(readFileSync(path.join(root, STATE, 'sli.json'), 'utf8')) as Figures;

/** the environment of a run with the test systemd, and the network stand-in, on `root` */
async function withSystemd(root: string, units: Parameters<typeof bus.services.configure>[0]['units'] = {}) {
  const env: Record<string, string> = { ...stubEnvironment(root), DBUS_SYSTEM_BUS_ADDRESS: bus.address };
  writeFileSync(env.NMSTATECTL_STUB_STATE!, JSON.stringify({ current: factoryNetwork() }));
  await bus.services.configure({ root, units });
  return env;
}

describe('the relocation figures count every run', () => {
  it('a site-config refused at admission for its signature: refused, stopped at admission', () => {
    const root = factoryRoot();
    const keys = mkdtempSync(path.join(tmpdir(), 'sli-keys-'));
    expect(runCli(['keygen', '--out', path.join(keys, 'site')]).code).toBe(0);
    mkdirSync(path.join(root, 'etc/sno-relocate/trust'), { recursive: true });
    copyFileSync(path.join(keys, 'site.pub'), path.join(root, 'etc/sno-relocate/trust/site.pub'));

    const r = runCli(['run', EXAMPLE, '--root', root, '--console', path.join(root, 'console')]);
    expect(r.code, r.stderr).toBe(3);
    expect(r.stderr).toContain('site-config refused');
    expect(record(root)).toMatchObject({
      runs: { succeeded: 0, failed: 0, refused: 1 },
      stepFailures: { admission: { refused: 1 } },
      lastRun: { result: 'refused', stoppedAt: 'admission', reason: 'refused', durationSeconds: 0 },
    });

    // a second refusal counts again: the counter is what an alert on a rate reads
    expect(runCli(['run', EXAMPLE, '--root', root]).code).toBe(3);
    expect(record(root).stepFailures.admission).toEqual({ refused: 2 });
  });

  it('an invalid site-config: refused, stopped at admission as invalid', () => {
    const root = factoryRoot();
    const site = mkdtempSync(path.join(tmpdir(), 'sli-invalid-'));
    cpSync(EXAMPLE, site, { recursive: true });
    const file = path.join(site, 'site-config.yaml');
    writeFileSync(file, readFileSync(file, 'utf8').replace(/^ {2}baseDomain: .*$/m, '  baseDomain: "not a domain!"'));
    const r = runCli(['run', site, '--root', root]);
    expect(r.code, r.stderr).toBe(2);
    expect(record(root)).toMatchObject({
      runs: { refused: 1 },
      stepFailures: { admission: { invalid: 1 } },
      lastRun: { result: 'refused', stoppedAt: 'admission', reason: 'invalid' },
    });
  });

  it('a run a step refuses (kubelet masked) at the preflight of the node steps: refused, stopped there', async () => {
    const root = factoryRoot();
    const env = await withSystemd(root, { 'kubelet.service': { unitFileState: 'masked' } });
    const r = runCli(
      ['run', path.join(REPO, 'test/fixtures/kubelet-masked/site-config'), '--root', root, '--only', 'node'],
      {
        env,
      },
    );
    expect(r.code, r.stderr).toBe(3);
    expect(r.stderr).toMatch(/run refused: .*kubelet/);
    expect(record(root)).toMatchObject({
      runs: { succeeded: 0, failed: 0, refused: 1 },
      stepFailures: { preflight: { refused: 1 } },
      lastRun: { result: 'refused', stoppedAt: 'preflight', reason: 'refused' },
    });
  });

  it('a run over a damaged state file: refused before any step', () => {
    const root = factoryRoot();
    mkdirSync(path.join(root, STATE), { recursive: true });
    writeFileSync(path.join(root, STATE, 'state.json'), 'garbage');
    expect(runCli(['run', EXAMPLE, '--root', root, '--only', 'ssh-keys']).code).toBe(3);
    expect(record(root)).toMatchObject({
      runs: { refused: 1 },
      lastRun: { result: 'refused', stoppedAt: 'preflight', reason: 'refused' },
    });
  });

  it('a failed run, then a successful one: each counted, the last one said', async () => {
    const root = factoryRoot();
    const failed = runCli(['run', EXAMPLE, '--root', root, '--only', 'ssh-keys'], {
      env: { DBUS_SYSTEM_BUS_ADDRESS: `unix:path=${path.join(root, 'no-bus')}` },
    });
    expect(failed.code, failed.stderr).toBe(1);
    expect(record(root)).toMatchObject({
      runs: { succeeded: 0, failed: 1, refused: 0 },
      stepFailures: { 'ssh-keys': { other: 1 } },
      lastRun: { result: 'failed', stoppedAt: 'ssh-keys', reason: 'other' },
    });

    const env = await withSystemd(root);
    const succeeded = runCli(['run', EXAMPLE, '--root', root, '--only', 'ssh-keys'], { env });
    expect(succeeded.code, succeeded.stderr).toBe(0);
    const after = record(root);
    expect(after.runs).toEqual({ succeeded: 1, failed: 1, refused: 0 });
    expect(after.lastRun.result).toBe('succeeded');
    expect(after.lastRun).not.toHaveProperty('stoppedAt');
    expect(after.lastRun).not.toHaveProperty('reason');
  });
});
