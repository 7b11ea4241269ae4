/**
 * What a person sees while the kubelet gate holds kubelet, when no alert can fire (the platform
 * Prometheus runs on kubelet): a shipped node (the gate's drop-in installed, its marker cleared
 * by factory seal) whose site's network step fails. The console's last line, `status` and the
 * journal say that kubelet is held, why, and what to do; the agent runs from source against the
 * nmstatectl stand-in and a private D-Bus.
 */
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MessageId } from '../../src/log/events.js';
import { KUBELET_GATE_DROP_IN, renderKubeletGateDropIn } from '../../src/node/kubelet-gate.js';
import { startTestBus } from '../dbus/bus.js';
import { layFactoryNode } from '../fixtures/factory-node.js';
import { loopbackStoreSpec, runAgent, writeSiteFolder } from '../node/cli.js';
import { stubEnvironment } from '../node/context.js';
import { factoryNetwork } from '../node/factory-network.js';

const NMSTATE_ERROR = 'NmstateVerificationError: br-ex has no carrier';
const STEP_ID = MessageId.stepFailed;

let bus: Awaited<ReturnType<typeof startTestBus>>;
let root: string;
let site: string;
let env: Record<string, string>;
const agent = (...args: string[]) => runAgent([...args, '--root', root], env);

beforeAll(async () => {
  root = mkdtempSync(path.join(tmpdir(), 'kubelet-held-'));
  layFactoryNode(root);
  // as factory seal leaves it: the gate's drop-in installed, its marker gone
  const dropIn = path.join(root, 'etc/systemd/system/kubelet.service.d', KUBELET_GATE_DROP_IN);
  mkdirSync(path.dirname(dropIn), { recursive: true });
  writeFileSync(dropIn, renderKubeletGateDropIn());
  site = writeSiteFolder(
    mkdtempSync(path.join(tmpdir(), 'site-')),
    'store-0042',
    loopbackStoreSpec('c2l0ZTpzZWNyZXQ=', 5),
  );
  bus = await startTestBus({ root });
  env = { ...stubEnvironment(root), DBUS_SYSTEM_BUS_ADDRESS: bus.address, NMSTATECTL_STUB_FAIL_APPLY: NMSTATE_ERROR };
  writeFileSync(env.NMSTATECTL_STUB_STATE!, JSON.stringify({ current: factoryNetwork() }));
});
afterAll(() => bus?.stop());

describe('while kubelet is held', () => {
  it('status on a shipped node says kubelet waits for a site, and how to give it one', () => {
    const status = agent('status');
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toContain(
      "Kubelet:  kubelet held by the kubelet gate until a site's node steps pass: plug in the site's stick (a filesystem labelled cluster-config); the agent runs at once\n",
    );
  });

  it('a failed node step: the console, status and the journal say kubelet is held, why, and what to do', () => {
    const consoleFile = path.join(root, 'console');
    const run = agent('run', site, '--only', 'node', '--console', consoleFile, '--log-format', 'json');
    expect(run.code).toBe(1);
    const held = `kubelet held by the kubelet gate until the node steps of site store-0042 pass; the run failed: network: `;
    const todo = `To go on: fix what it names (journalctl -u sno-relocate MESSAGE_ID=${STEP_ID}), then plug the stick in again or run sno-relocate run; the steps already done are kept`;
    // the console's last line, where the technician looks
    const last = readFileSync(consoleFile, 'utf8').trimEnd().split('\n').pop()!;
    expect(last).toContain(held);
    expect(last).toContain(NMSTATE_ERROR);
    expect(last).toContain(todo);
    // the journal (its JSON form: msgId is the journal's MESSAGE_ID): why, by message id, then the same line
    const lines = run.stderr
      .split('\n')
      // the JSON log lines; the last line is the error as printed for a terminal
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { msgId?: string; msg: string; level: string | number });
    const ids = lines.map((l) => l.msgId).filter(Boolean);
    // the gate was already closed (factory seal): no kubeletGateClosed, the step's failure and the run's
    expect(ids).toEqual(expect.arrayContaining([MessageId.stepFailed, MessageId.runFailed]));
    expect(lines.find((l) => l.msgId === MessageId.stepFailed)!.msg).toContain(NMSTATE_ERROR);
    const told = lines.findIndex((l) => l.msg.startsWith(held));
    expect(told).toBeGreaterThan(lines.findIndex((l) => l.msgId === MessageId.stepFailed));
    expect(lines[told]!.msg).toContain(NMSTATE_ERROR);
    expect(lines[told]!.msg).toContain(todo);
    // status, from afar
    const status = agent('status');
    expect(status.stdout).toMatch(
      /^Kubelet: {2}kubelet held by the kubelet gate until the node steps of site store-0042 pass; the run failed: network: /m,
    );
    expect(status.stdout).toContain(todo);
    const json = JSON.parse(agent('status', '-o', 'json').stdout) as { kubeletHeld: string | null };
    expect(json.kubeletHeld).toContain(todo);
  });

  it('says nothing of a held kubelet once the node steps passed and opened the gate', () => {
    const { NMSTATECTL_STUB_FAIL_APPLY: _failing, ...working } = env;
    const run = runAgent(['run', site, '--only', 'node', '--root', root], working);
    expect(run.code, run.stderr).toBe(0);
    const status = agent('status');
    expect(status.stdout).not.toContain('Kubelet:  ');
    expect((JSON.parse(agent('status', '-o', 'json').stdout) as { kubeletHeld: unknown }).kubeletHeld).toBeNull();
  });
});
