// The node key sealed to a TPM2, on real nodes: two guests, each with its own software TPM
// (Debian's swtpm, attached to qemu as a TIS device). On the first, the node's age identity is
// sealed with systemd-creds to its TPM2, as factory prepare seals it where a TPM2 is present; a
// stick sealed to that node's key and signed for it is opened by the agent in the guest. The second
// guest, with its own node key in its own TPM2, refuses that stick naming the node it is sealed
// for; and the first node's credential file, moved to the second guest, does not open there.
//
// The guests boot the kernel directly (PVH, -kernel and -initrd): qemu puts the initrd just under
// the ACPI tables' reserve at the top of low memory, and with a TPM the tables (and the TPM event
// log SeaBIOS places beside them) outgrow that reserve, so loading the initrd overwrites them: the
// kernel finds garbage ("ACPI: Interpreter disabled"), never enumerates the TPM's ACPI device, and
// IMA says "No TPM chip found". The built-in tpm_tis driver is told to probe the TIS registers at
// their standard address instead (tpm_tis.force=1, polling: tpm_tis.interrupts=0).
//
// The first guest also makes a support bundle from its own journal: the agent's lines under its
// unit, the machine-config daemon's under the identifier it really writes with, a secret redacted.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { generateX25519Identity, identityToRecipient } from 'age-encryption';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NODE_KEY_CREDENTIAL, NODE_KEY_RECORD } from '../../src/trust/node-key.js';
import { EXAMPLE } from '../helpers/cli.js';
import { shq } from './node-checks.js';
import { AGENT_BINARY, ensureAgentBuild } from './node-image.js';
import { bootVm, type Vm } from './vm.js';

const MIN = 60_000;
const skip = process.env.VM_E2E === '0';
const run = promisify(execFile);
/** a registry credential planted in the journal: base64 of "robot:S3cret-in-the-journal" */
const MCD_SECRET = Buffer.from('robot:S3cret-in-the-journal').toString('base64');

interface Node {
  vm: Vm;
  machineId: string;
  recipient: string;
}

/** a software TPM2 for one guest, on a unix socket qemu connects to */
function startTpm(dir: string, name: string): { tpm: ChildProcess; qemuArgs: string[] } {
  const state = join(dir, `${name}-tpm`);
  mkdirSync(state, { recursive: true });
  const socket = join(dir, `${name}-tpm.sock`);
  const tpm = spawn(
    'swtpm',
    [
      'socket',
      '--tpm2',
      '--tpmstate',
      `dir=${state}`,
      '--ctrl',
      `type=unixio,path=${socket}`,
      '--flags',
      'not-need-init,startup-clear',
    ],
    { stdio: 'ignore' },
  );
  return {
    tpm,
    qemuArgs: [
      '-chardev',
      `socket,id=chrtpm,path=${socket}`,
      '-tpmdev',
      'emulator,id=tpm0,chardev=chrtpm',
      '-device',
      'tpm-tis,tpmdev=tpm0',
    ],
  };
}

describe.skipIf(skip)('the node key sealed to a software TPM2', () => {
  let dir = '';
  let factoryKey = '';
  const nodes: Node[] = [];
  /** what was started, for afterAll to stop even when a boot fails half way */
  const started: { vm?: Vm; tpm: ChildProcess }[] = [];
  /** the agent under test, built on the host */
  let hostAgent = '';

  /** boots a guest with its own TPM, installs the agent and seals a new node key to the TPM */
  async function node(name: string): Promise<Node> {
    const { tpm, qemuArgs } = startTpm(dir, name);
    const parts: { vm?: Vm; tpm: ChildProcess } = { tpm };
    started.push(parts);
    const vm = await bootVm({
      name: `sealed-tpm-${name}`,
      qemuArgs,
      kernelArgs: 'tpm_tis.force=1 tpm_tis.interrupts=0',
    });
    parts.vm = vm;
    // under emulation on a loaded machine a boot takes minutes
    await vm.waitSsh(20 * MIN);
    // a BIOS boot measures nothing, so support is partial; the kernel's TPM2 device is what seals
    expect((await vm.ssh('systemd-creds has-tpm2')).stdout, 'the guest sees its TPM2').toMatch(/^\+driver$/m);
    await vm.sshOk(`cat > ${AGENT_BINARY} && chmod 755 ${AGENT_BINARY}`, {
      input: readFileSync(hostAgent),
      timeoutMs: 10 * MIN,
    });
    const identity = await generateX25519Identity();
    const recipient = await identityToRecipient(identity);
    // as factory prepare seals it on a node with a TPM2: the identity through stdin, the credential root's only
    await vm.sshOk(
      `mkdir -p /etc/sno-relocate && systemd-creds encrypt --name=sno-relocate-node-key --with-key=tpm2 - - > ${NODE_KEY_CREDENTIAL} && chmod 600 ${NODE_KEY_CREDENTIAL}`,
      { input: identity },
    );
    await vm.sshOk(`cat > ${NODE_KEY_RECORD}`, {
      input: JSON.stringify({ version: 1, recipient, sealing: 'tpm2', madeAt: new Date().toISOString() }),
    });
    const machineId = (await vm.sshOk('cat /etc/machine-id')).trim();
    return { vm, machineId, recipient };
  }

  /** a copy of the example, sealed to `n`'s key and signed for it, copied into `on` at /root/stick */
  async function stickFor(n: Node, on: Node): Promise<void> {
    const stick = join(dir, `stick-${n.machineId}`);
    cpSync(EXAMPLE, stick, { recursive: true });
    await run(hostAgent, [
      'sign',
      '--key',
      factoryKey,
      '--bind-machine-id',
      n.machineId,
      '--node-key',
      n.recipient,
      stick,
    ]);
    const { stdout } = await run('tar', ['-C', stick, '-cf', '-', '.'], { encoding: 'buffer', maxBuffer: 1 << 26 });
    await on.vm.sshOk('rm -rf /root/stick && mkdir -p /root/stick && tar -C /root/stick -xf -', { input: stdout });
  }

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'sno-sealed-tpm-'));
    hostAgent = await ensureAgentBuild();
    await run(hostAgent, ['keygen', '--out', join(dir, 'factory')]);
    factoryKey = join(dir, 'factory.key');
    nodes.push(await node('a'));
    nodes.push(await node('b'));
  }, 60 * MIN);

  afterAll(async () => {
    for (const { vm, tpm } of started) {
      await vm?.collectArtifacts().catch((e: Error) => console.log(`artifacts: ${e.message}`));
      await vm?.dispose();
      tpm.kill();
    }
    if (dir) await rm(dir, { recursive: true, force: true });
  }, 10 * MIN);

  it(
    'opens a stick sealed to the node whose TPM2 holds its key',
    async () => {
      const [a] = nodes;
      await stickFor(a!, a!);
      const r = await a!.vm.ssh(`${AGENT_BINARY} validate /root/stick`);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain('site-config valid: site store-0042');
      expect(r.stdout).not.toContain('sealed for');
    },
    10 * MIN,
  );

  it(
    "bundles the node's real journal: the agent's unit and the machine-config daemon's lines, the secret redacted",
    async () => {
      const [a] = nodes;
      const v = a!.vm;
      // the agent as its unit runs it, and the daemon's line as it writes it: `logger` with no tag,
      // so journald files it under root (src/support/bundle.ts cites the daemon's code)
      await v.sshOk(`systemd-run --unit=sno-relocate.service --wait --collect ${AGENT_BINARY} validate /root/stick`);
      await v.sshOk(
        `logger ${shq(`machine-config-daemon[4242]: writing pull secret {"auths":{"q":{"auth":"${MCD_SECRET}"}}}`)}`,
      );
      await v.sshOk('journalctl --sync');
      await v.sshOk(`${AGENT_BINARY} support-bundle --out /root/bundle.tar.gz`, { timeoutMs: 5 * MIN });
      const read = (entry: string) => v.sshOk(`tar -xzOf /root/bundle.tar.gz --wildcards '*${entry}'`);
      expect(await read('journal/sno-relocate.txt')).toContain('site-config is not authenticated');
      const daemon = await read('journal/machine-config-daemon.txt');
      expect(daemon).toContain('machine-config-daemon[4242]: writing pull secret');
      expect(daemon).not.toContain(MCD_SECRET);
      expect(await v.sshOk('tar -xzOf /root/bundle.tar.gz')).not.toContain(MCD_SECRET);
    },
    10 * MIN,
  );

  it(
    "refuses that stick on another node, naming the node it is sealed for, with that node's own key",
    async () => {
      const [a, b] = nodes;
      await stickFor(a!, b!);
      const r = await b!.vm.ssh(`${AGENT_BINARY} validate /root/stick`);
      expect(r.code).toBe(3);
      expect(r.stderr).toContain(`sealed for node ${a!.machineId}, not for this node (`);
      expect(r.stderr).toContain('nothing on the host was changed');
    },
    10 * MIN,
  );

  it(
    "does not open the first node's credential moved to the second node",
    async () => {
      const [a, b] = nodes;
      const credential = await a!.vm.sshOk(`base64 -w0 ${NODE_KEY_CREDENTIAL}`);
      await b!.vm.sshOk(`base64 -d > ${NODE_KEY_CREDENTIAL}`, { input: credential });
      const r = await b!.vm.ssh(`${AGENT_BINARY} validate /root/stick`);
      expect(r.code).toBe(3);
      expect(r.stderr).toContain(`the node key ${NODE_KEY_CREDENTIAL} does not open on this machine`);
    },
    10 * MIN,
  );
});
