/**
 * VM driver for the end-to-end suite: real Debian bookworm nodes (systemd, dbus, udev,
 * NetworkManager, sshd) under qemu, booted from the image that build-base.sh makes and caches.
 *
 * Machine: qemu-system-x86_64 as a child of the test process (never -daemonize: a power cut must be
 * a SIGKILL whose exit we can await), `-accel ${VM_ACCEL:-tcg} -cpu ${VM_CPU:-max} -smp ${VM_SMP:-2}
 * -m ${VM_MEM:-1536}`, PVH `-kernel vmlinux` + initrd, root ext4 on virtio /dev/vda, two restricted
 * user-net NICs, qemu-xhci for USB sticks, serial console to a file, QMP on a unix socket. There is
 * no usable KVM on the CI machines, so everything runs under TCG: boot to ssh takes 20-45 s.
 *
 * Guest network (no packet leaves qemu: restrict=on; ssh is forwarded on 127.0.0.1 only):
 *   ens3  management: 10.0.2.15/24, systemd-networkd, unmanaged by NetworkManager; ssh only.
 *   ens4  uplink: NetworkManager profile `uplink` (DHCP 192.0.2.100/24 + default route via
 *         192.0.2.1, which answers ping). This is the NIC the agent's br-ex takes as its port.
 *         No DNS server and no route beyond 192.0.2.0/24 exist.
 *   hostForwards: a host loopback service (a test API server) at an address of 10.0.2.0/24,
 *         relayed per connection (guestfwd); the only way the guest reaches the host.
 *
 * Disks: by default each VM boots a qcow2 overlay (in its work folder) backed by a raw image that is
 * never written: base.raw, or a payload image made with copyBaseDisk() + disk.ts installFiles().
 * `diskMode: 'direct'` boots and writes the raw image itself (debugfs can then read it afterwards).
 *
 * Typical use:
 *   const disk = await copyBaseDisk('/tmp/run/payload.raw');           // once per run
 *   await installFiles(disk, [...agent, units]); await enableUnit(disk, 'x.service');
 *   const stick = await makeStick({ label: 'cluster-config', files: [...] });
 *   const vm = await bootVm({ name: 'coldplug', disk, sticks: [stick] });
 *   await vm.waitSsh();
 *   await vm.waitFor('systemctl is-active kubelet', (r) => r.stdout.trim() === 'active', 300_000);
 *   await vm.collectArtifacts(); await vm.dispose();
 *
 * A guest-initiated reboot or poweroff ends qemu (-no-reboot); call bootAgain() to boot the same
 * disk again. All checks poll (waitSerial, waitSsh, waitFor); nothing sleeps to synchronise.
 * Every qemu and ssh process is stopped by pid in dispose(), and as a last resort when the test
 * process exits. Artifacts go to .artifacts/<name>/ at the repository root.
 *
 * TPM: `tpm: true` gives the guest a software TPM2 of its own (swtpm, its state in the work folder,
 * kept across bootAgain()) as a TIS device, seen by the kernel as /dev/tpm0 and /dev/tpmrm0. Such a
 * guest boots with qemu's qboot firmware instead of SeaBIOS: qemu loads the initrd just under the
 * 160 KiB it keeps for the firmware's ACPI data at the top of low memory, and SeaBIOS with a TPM
 * needs 204 KiB there (128 KiB of tables, the TPM's 64 KiB event log), so the initrd overwrites the
 * tables ("ACPI: Interpreter disabled": no TPM device, the NICs named enp0s3 instead of ens3, no
 * network). qboot puts the tables below 1 MiB, out of the initrd's way.
 *
 * Environment: VM_ACCEL, VM_CPU, VM_SMP, VM_MEM (above); VM_KEEP=1 keeps work folders;
 * SNO_RELOCATE_VM_CACHE moves the image cache (default /var/cache/sno-relocate-vm).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, createWriteStream, existsSync, openSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freeTcpPort } from '../helpers/ports.js';
import { type BaseImage, ensureBaseImage } from './base-image.js';
import { deadlineAfter, delay, execOut, exited, killAndWait, now, track } from './processes.js';
import { Qmp } from './qmp.js';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface SshResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface SshOptions {
  /** written to the command's stdin */
  input?: string | Buffer;
  /** default 120 s; the ssh process is killed and an error thrown after it */
  timeoutMs?: number;
  /** default root (multiplexed); other users get their own connection */
  user?: string;
}

export interface BootOptions {
  /** scenario name: names the work folder and .artifacts/<name>/ */
  name: string;
  /** raw image to boot; default the cached base.raw */
  disk?: string;
  /** 'overlay' (default): a qcow2 overlay in the work folder, `disk` stays untouched; 'direct': boot `disk` itself */
  diskMode?: 'overlay' | 'direct';
  /** stick images attached before boot (usb-storage on qemu-xhci), in order */
  sticks?: string[];
  /** extra kernel command line */
  kernelArgs?: string;
  /** -netdev user options of the uplink NIC (ens4) after `id=uplink,restrict=on,` */
  uplinkNet?: string;
  /**
   * restrict=off on the uplink: the guest reaches the host's loopback at the gateway address
   * (192.0.2.1) by UDP too, e.g. a time server (guestfwd relays TCP only). The uplink then routes
   * beyond the host as well; the guest has no DNS server there.
   */
  uplinkToHost?: boolean;
  smp?: number;
  memMiB?: number;
  accel?: string;
  cpu?: string;
  /** extra qemu arguments */
  qemuArgs?: string[];
  /** a software TPM2 of the guest's own (see the top of this file) */
  tpm?: boolean;
  /**
   * TCP services of the host's loopback the guest reaches on the management network (restrict=on
   * lets nothing else through): each connection to guest `address:port` is relayed to
   * 127.0.0.1:`hostPort` by a relay process qemu spawns for it (guestfwd cmd:).
   */
  hostForwards?: HostForward[];
}

export interface HostForward {
  /** an address of the management network (10.0.2.0/24) other than 10.0.2.2, .3 and .15 */
  address: string;
  port: number;
  hostPort: number;
}

interface Stick {
  id: string;
  node: string;
  image: string;
  readOnly: boolean;
}

const DEFAULT_UPLINK = 'net=192.0.2.0/24,host=192.0.2.1,dhcpstart=192.0.2.100';

/** one guest connection (stdin, stdout) to 127.0.0.1:argv[2], ending when either side ends */
const RELAY = `const up = require('node:net').connect(Number(process.argv[2]), '127.0.0.1');
process.stdin.pipe(up).pipe(process.stdout);
up.on('close', () => process.exit(0));
up.on('error', () => process.exit(1));
`;

// eslint-disable-next-line no-control-regex
const ANSI = /\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][0-9A-Za-z]|\r/g;

export class Vm {
  /** the image qemu boots (overlay or raw) */
  readonly diskPath: string;
  readonly diskFormat: 'qcow2' | 'raw';
  readonly artifactsDir: string;
  /** 1 for the first boot, 2 after the first bootAgain(), ... */
  bootCount = 0;
  sshPort = 0;
  /** wall-clock ms from qemu spawn to the first successful ssh command, per boot */
  readonly bootToSshMs: number[] = [];
  qmp?: Qmp;

  private proc?: ChildProcess;
  private master?: ChildProcess;
  private swtpm?: ChildProcess;
  private bootStartedAt = 0;
  private sticks: Stick[] = [];
  private stickSeq = 0;

  constructor(
    readonly opts: BootOptions,
    readonly base: BaseImage,
    readonly workDir: string,
    disk: { path: string; format: 'qcow2' | 'raw' },
  ) {
    this.diskPath = disk.path;
    this.diskFormat = disk.format;
    this.artifactsDir = join(REPO_ROOT, '.artifacts', opts.name);
  }

  get name(): string {
    return this.opts.name;
  }
  get running(): boolean {
    return !!this.proc && this.proc.exitCode === null && this.proc.signalCode === null;
  }
  get pid(): number | undefined {
    return this.proc?.pid;
  }
  get serialPath(): string {
    return join(this.workDir, `serial-${this.bootCount}.log`);
  }
  private get qmpPath(): string {
    return join(this.workDir, 'qmp.sock');
  }
  private get tpmSocket(): string {
    return join(this.workDir, 'swtpm.sock');
  }
  private get controlPath(): string {
    return join(this.workDir, 'ssh.ctl');
  }
  /** the relay qemu runs for each connection of a host forward (its stdin and stdout are the guest's side) */
  get relayPath(): string {
    return join(this.workDir, 'relay.cjs');
  }
  /** how the last qemu process ended, once it has */
  get exit(): { code: number | null; signal: NodeJS.Signals | null } | undefined {
    const p = this.proc;
    return p && (p.exitCode !== null || p.signalCode !== null) ? { code: p.exitCode, signal: p.signalCode } : undefined;
  }
  /** stick images currently attached */
  get attachedSticks(): string[] {
    return this.sticks.map((s) => s.image);
  }

  // ---- lifecycle ----

  /** Spawns qemu for a new boot of the disk (retrying with another port if hostfwd could not bind). */
  async start(sticks: string[]): Promise<void> {
    if (this.running) throw new Error(`${this.name}: already running`);
    this.bootCount++;
    this.sticks = [];
    if (this.opts.hostForwards?.length) await writeFile(this.relayPath, RELAY);
    for (const image of sticks) this.sticks.push(this.newStick(image, false));
    for (let attempt = 1; ; attempt++) {
      if (this.opts.tpm) await this.startTpm();
      this.sshPort = await freeTcpPort();
      await rm(this.qmpPath, { force: true });
      await rm(this.controlPath, { force: true });
      const logPath = join(this.workDir, `qemu-${this.bootCount}.log`);
      const logFd = openSync(logPath, 'w');
      this.bootStartedAt = now();
      const proc = track(spawn('qemu-system-x86_64', this.qemuArgs(), { stdio: ['ignore', logFd, logFd] }));
      closeSync(logFd);
      this.proc = proc;
      try {
        this.qmp = await Qmp.connect(this.qmpPath, 60_000, () => proc.exitCode === null && proc.signalCode === null);
        return;
      } catch (e) {
        await killAndWait(proc);
        const log = await readFile(logPath, 'utf8').catch(() => '');
        if (attempt < 5 && /host forwarding|Address already in use/i.test(log)) continue;
        throw new Error(`${this.name}: qemu failed to start: ${(e as Error).message}\n${log}`);
      }
    }
  }

  /** swtpm for this boot, on the state of the guest's TPM in the work folder; ends when qemu lets go of it */
  private async startTpm(): Promise<void> {
    // a qemu that failed to start has let go of the last one
    await killAndWait(this.swtpm, 'SIGTERM');
    const state = join(this.workDir, 'tpm');
    await mkdir(state, { recursive: true });
    await rm(this.tpmSocket, { force: true });
    const tpm = track(
      spawn(
        'swtpm',
        [
          'socket',
          '--tpm2',
          '--tpmstate',
          `dir=${state}`,
          '--ctrl',
          `type=unixio,path=${this.tpmSocket}`,
          '--terminate',
        ],
        { stdio: 'ignore' },
      ),
    );
    this.swtpm = tpm;
    const deadline = now() + 30_000;
    while (!existsSync(this.tpmSocket)) {
      if (tpm.exitCode !== null || tpm.signalCode !== null) throw new Error(`${this.name}: swtpm exited`);
      if (now() > deadline) throw new Error(`${this.name}: swtpm made no socket within 30 s`);
      await delay(50);
    }
  }

  private newStick(image: string, readOnly: boolean): Stick {
    const n = this.stickSeq++;
    return { id: `usbstick${n}`, node: `stick${n}`, image: resolve(image), readOnly };
  }

  private qemuArgs(): string[] {
    const o = this.opts;
    const accel = o.accel ?? process.env.VM_ACCEL ?? 'tcg';
    const append = ['root=/dev/vda', 'rw', 'console=ttyS0', 'panic=-1', o.kernelArgs ?? ''].filter(Boolean).join(' ');
    const args = [
      '-name',
      `sno-relocate-${o.name}`,
      '-nodefaults',
      '-no-user-config',
      '-vga',
      'none',
      '-display',
      'none',
      '-no-reboot',
      '-accel',
      accel,
      '-cpu',
      o.cpu ?? process.env.VM_CPU ?? 'max',
      '-smp',
      String(o.smp ?? Number(process.env.VM_SMP ?? 2)),
      '-m',
      String(o.memMiB ?? Number(process.env.VM_MEM ?? 1536)),
      '-kernel',
      this.base.kernel,
      '-initrd',
      this.base.initrd,
      '-append',
      append,
      '-blockdev',
      JSON.stringify({
        driver: this.diskFormat,
        'node-name': 'root',
        file: { driver: 'file', filename: this.diskPath },
      }),
      '-device',
      'virtio-blk-pci,drive=root,addr=0x5',
      '-netdev',
      [
        `user,id=mgmt,restrict=on,hostfwd=tcp:127.0.0.1:${this.sshPort}-:22`,
        ...(o.hostForwards ?? []).map(
          (f) => `guestfwd=tcp:${f.address}:${f.port}-cmd:${process.execPath} ${this.relayPath} ${f.hostPort}`,
        ),
      ].join(','),
      '-device',
      'virtio-net-pci,netdev=mgmt,addr=0x3,mac=52:54:00:12:34:56',
      '-netdev',
      `user,id=uplink,restrict=${o.uplinkToHost ? 'off' : 'on'},${o.uplinkNet ?? DEFAULT_UPLINK}`,
      '-device',
      'virtio-net-pci,netdev=uplink,addr=0x4,mac=52:54:00:12:34:57',
      '-device',
      'qemu-xhci,id=xhci,addr=0x6',
      '-serial',
      `file:${this.serialPath}`,
      '-qmp',
      `unix:${this.qmpPath},server=on,wait=off`,
    ];
    if (o.tpm) {
      args.push('-bios', 'qboot.rom');
      args.push('-chardev', `socket,id=swtpm,path=${this.tpmSocket}`);
      args.push('-tpmdev', 'emulator,id=tpm0,chardev=swtpm', '-device', 'tpm-tis,tpmdev=tpm0');
    }
    for (const s of this.sticks) {
      args.push('-blockdev', JSON.stringify(this.stickBlockdev(s)));
      args.push('-device', `usb-storage,bus=xhci.0,drive=${s.node},id=${s.id},removable=on`);
    }
    return [...args, ...(o.qemuArgs ?? [])];
  }

  private stickBlockdev(s: Stick): Record<string, unknown> {
    return { driver: 'raw', 'node-name': s.node, 'read-only': s.readOnly, file: { driver: 'file', filename: s.image } };
  }

  /**
   * Boots the same disk again after powerCut(), shutdown() or a guest poweroff/reboot. Sticks that
   * were attached stay attached (as at a real power cycle) unless `sticks` says otherwise.
   */
  async bootAgain(opts: { sticks?: string[] } = {}): Promise<void> {
    if (this.running)
      throw new Error(`${this.name}: bootAgain() while qemu is running; powerCut() or shutdown() first`);
    await this.stopSsh();
    this.qmp?.close();
    await this.start(opts.sticks ?? this.attachedSticks);
  }

  /** SIGKILL to qemu (the disk sees a power cut), awaiting its exit. */
  async powerCut(): Promise<void> {
    await this.stopSsh();
    await killAndWait(this.proc, 'SIGKILL');
    await killAndWait(this.swtpm, 'SIGTERM');
    this.qmp?.close();
  }

  /**
   * Waits for the guest to reboot or power off by itself (qemu runs with -no-reboot, so it exits);
   * throws after `timeoutMs`. Call bootAgain() next.
   */
  async waitGuestStopped(timeoutMs = 300_000): Promise<void> {
    const proc = this.proc;
    if (!proc || !this.running) return;
    const stopped = await Promise.race([exited(proc).then(() => true), deadlineAfter(timeoutMs).then(() => false)]);
    if (!stopped) throw new Error(`${this.name}: the guest did not stop within ${timeoutMs} ms`);
    await this.powerCut();
  }

  /** Clean poweroff (systemctl, then ACPI), falling back to a power cut after `timeoutMs`. */
  async shutdown(timeoutMs = 120_000): Promise<void> {
    if (!this.running) return this.powerCut();
    const proc = this.proc!;
    const done = exited(proc);
    await this.ssh('systemctl poweroff --no-block', { timeoutMs: 30_000 }).catch(() => undefined);
    const first = await Promise.race([done.then(() => true), deadlineAfter(timeoutMs / 2).then(() => false)]);
    if (!first) {
      await this.qmp?.execute('system_powerdown').catch(() => undefined);
      await Promise.race([done, deadlineAfter(timeoutMs / 2)]);
    }
    await this.powerCut();
  }

  /** Stops everything by pid and removes the work folder (unless VM_KEEP=1). */
  async dispose(): Promise<void> {
    await this.powerCut();
    if (process.env.VM_KEEP !== '1') await rm(this.workDir, { recursive: true, force: true });
  }

  private async waitExitOr<T>(p: Promise<T>, what: string): Promise<T> {
    const proc = this.proc;
    if (!proc) return p;
    let onExit: (() => void) | undefined;
    const died = new Promise<never>((_, rej) => {
      onExit = () => rej(new Error(`${this.name}: qemu exited (${proc.exitCode ?? proc.signalCode}) while ${what}`));
      if (proc.exitCode !== null || proc.signalCode !== null) onExit();
      else proc.once('exit', onExit);
    });
    died.catch(() => undefined);
    try {
      return await Promise.race([p, died]);
    } finally {
      if (onExit) proc.off('exit', onExit);
    }
  }

  // ---- serial console ----

  /** The serial console of the current boot, with ANSI escapes and CRs removed. */
  async serialText(): Promise<string> {
    const raw = await readFile(this.serialPath, 'utf8').catch(() => '');
    return raw.replace(ANSI, '');
  }

  /**
   * Polls the current boot's serial console until `re` matches (in the text after offset `from`,
   * an index into serialText()). Fails early when qemu exits.
   */
  async waitSerial(re: RegExp, timeoutMs = 300_000, from = 0): Promise<RegExpMatchArray> {
    const deadline = now() + timeoutMs;
    for (;;) {
      const m = (await this.serialText()).slice(from).match(re);
      if (m) return m;
      if (!this.running) {
        throw new Error(
          `${this.name}: qemu exited before serial matched ${re}\n${(await this.serialText()).slice(-2000)}`,
        );
      }
      if (now() > deadline) {
        throw new Error(
          `${this.name}: serial did not match ${re} within ${timeoutMs} ms\n${(await this.serialText()).slice(-2000)}`,
        );
      }
      await delay(250);
    }
  }

  // ---- ssh ----

  private sshBaseArgs(): string[] {
    return [
      '-i',
      this.base.sshKey,
      '-p',
      String(this.sshPort),
      '-o',
      'BatchMode=yes',
      '-o',
      'IdentitiesOnly=yes',
      '-o',
      'StrictHostKeyChecking=no',
      '-o',
      'UserKnownHostsFile=/dev/null',
      '-o',
      'LogLevel=ERROR',
      '-o',
      'ConnectTimeout=30',
      '-o',
      'ServerAliveInterval=10',
      '-o',
      'ServerAliveCountMax=6',
    ];
  }

  private async stopSsh(): Promise<void> {
    const m = this.master;
    this.master = undefined;
    await killAndWait(m, 'SIGTERM');
    await rm(this.controlPath, { force: true });
  }

  /**
   * Waits until sshd accepts root with the image key, keeping a ControlMaster connection (a child
   * process) that later ssh() calls multiplex over. Returns ms since this boot's qemu spawn.
   */
  async waitSsh(timeoutMs = 300_000): Promise<number> {
    const deadline = now() + timeoutMs;
    let lastErr = '';
    while (!(this.master && this.master.exitCode === null && existsSync(this.controlPath))) {
      if (!this.running)
        throw new Error(`${this.name}: qemu exited while waiting for ssh\n${(await this.serialText()).slice(-2000)}`);
      if (now() > deadline) throw new Error(`${this.name}: no ssh within ${timeoutMs} ms: ${lastErr}`);
      if (!this.master || this.master.exitCode !== null || this.master.signalCode !== null) {
        await this.stopSsh();
        const m = track(
          spawn(
            'ssh',
            [...this.sshBaseArgs(), '-M', '-N', '-S', this.controlPath, '-o', 'ControlPersist=no', 'root@127.0.0.1'],
            {
              stdio: ['ignore', 'ignore', 'pipe'],
            },
          ),
        );
        let err = '';
        m.stderr!.on('data', (d: Buffer) => (err += d.toString()));
        m.once('exit', () => (lastErr = err.trim() || lastErr));
        this.master = m;
        const startedAt = now();
        // wait for the control socket or the master's exit
        while (m.exitCode === null && m.signalCode === null && !existsSync(this.controlPath) && now() < deadline) {
          await delay(100);
        }
        // a refused or reset connection during boot ends in milliseconds: pace the retries
        if (m.exitCode !== null && now() - startedAt < 1000) await delay(1000 - (now() - startedAt));
      }
    }
    const r = await this.ssh('true', { timeoutMs: 60_000 });
    if (r.code !== 0) throw new Error(`${this.name}: ssh true failed: ${r.stderr}`);
    const ms = Math.round(now() - this.bootStartedAt);
    this.bootToSshMs[this.bootCount - 1] ??= ms;
    return ms;
  }

  /** Runs a shell command in the guest (as root by default). Never throws for a non-zero exit. */
  ssh(cmd: string, opts: SshOptions = {}): Promise<SshResult> {
    const user = opts.user ?? 'root';
    const mux = user === 'root' ? ['-S', this.controlPath, '-o', 'ControlMaster=no'] : ['-o', 'ControlPath=none'];
    const child = track(
      spawn('ssh', [...this.sshBaseArgs(), ...mux, `${user}@127.0.0.1`, '--', cmd], {
        stdio: ['pipe', 'pipe', 'pipe'],
      }),
    );
    const timeoutMs = opts.timeoutMs ?? 120_000;
    return new Promise((res, rej) => {
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      child.stdout!.on('data', (d: Buffer) => out.push(d));
      child.stderr!.on('data', (d: Buffer) => err.push(d));
      const timer = setTimeout(() => {
        void killAndWait(child);
        rej(new Error(`${this.name}: ssh ${JSON.stringify(cmd)} timed out after ${timeoutMs} ms`));
      }, timeoutMs);
      child.once('error', (e) => {
        clearTimeout(timer);
        rej(e);
      });
      child.once('close', (code, signal) => {
        clearTimeout(timer);
        res({
          code: code ?? (signal ? -1 : 0),
          stdout: Buffer.concat(out).toString(),
          stderr: Buffer.concat(err).toString(),
        });
      });
      child.stdin!.on('error', () => undefined);
      child.stdin!.end(opts.input ?? '');
    });
  }

  /** Like ssh(), but throws unless the command exits 0; returns its stdout. */
  async sshOk(cmd: string, opts: SshOptions = {}): Promise<string> {
    const r = await this.ssh(cmd, opts);
    if (r.code !== 0) throw new Error(`${this.name}: \`${cmd}\` exited ${r.code}\n${r.stderr}${r.stdout}`);
    return r.stdout;
  }

  /**
   * Runs `cmd` over ssh until `predicate` accepts its result, polling every `intervalMs` at first and
   * half as often again after each miss, up to every `maxIntervalMs`: each poll is an ssh session and
   * a command in an emulated guest, a quarter of a host core at 2 per second (bench/guest-waits.ts),
   * taken from the boot or the agent being waited for. Returns the accepted result; throws with the
   * last one on timeout, or when qemu exits.
   */
  async waitFor(
    cmd: string,
    predicate: (r: SshResult) => boolean,
    timeoutMs = 300_000,
    { intervalMs = 500, maxIntervalMs = 2000 }: { intervalMs?: number; maxIntervalMs?: number } = {},
  ): Promise<SshResult> {
    const deadline = now() + timeoutMs;
    let last: SshResult | undefined;
    let interval = intervalMs;
    for (;;) {
      if (!this.running) throw new Error(`${this.name}: qemu exited while waiting for \`${cmd}\``);
      const started = now();
      last = await this.waitExitOr(
        this.ssh(cmd, { timeoutMs: Math.max(30_000, Math.min(timeoutMs, 120_000)) }),
        `running ${cmd}`,
      );
      if (predicate(last)) return last;
      if (now() > deadline) {
        throw new Error(
          `${this.name}: \`${cmd}\` did not satisfy the condition within ${timeoutMs} ms; last: exit ${last.code}\n${last.stdout}${last.stderr}`,
        );
      }
      const spent = now() - started;
      if (spent < interval) await delay(interval - spent);
      interval = Math.min(maxIntervalMs, interval * 1.5);
    }
  }

  // ---- USB sticks ----

  /** Hot-plugs a stick image (QMP blockdev-add + device_add usb-storage on xhci). Returns its device id. */
  async plugStick(imagePath: string, opts: { readOnly?: boolean } = {}): Promise<string> {
    if (!this.running || !this.qmp) throw new Error(`${this.name}: not running`);
    const s = this.newStick(imagePath, opts.readOnly ?? false);
    await this.qmp.execute('blockdev-add', this.stickBlockdev(s));
    try {
      await this.qmp.execute('device_add', {
        driver: 'usb-storage',
        bus: 'xhci.0',
        drive: s.node,
        id: s.id,
        removable: true,
      });
    } catch (e) {
      await this.qmp.execute('blockdev-del', { 'node-name': s.node }).catch(() => undefined);
      throw e;
    }
    this.sticks.push(s);
    return s.id;
  }

  /** Pulls a stick out (device_del, then blockdev-del once qemu reports DEVICE_DELETED). Default: the last attached. */
  async unplugStick(id?: string): Promise<void> {
    if (!this.running || !this.qmp) throw new Error(`${this.name}: not running`);
    const s = id ? this.sticks.find((x) => x.id === id) : this.sticks[this.sticks.length - 1];
    if (!s) throw new Error(`${this.name}: no stick ${id ?? ''} attached`);
    const since = this.qmp.events.length;
    await this.qmp.execute('device_del', { id: s.id });
    await this.qmp.waitEvent('DEVICE_DELETED', (e) => e.data?.device === s.id, 60_000, since);
    await this.qmp.execute('blockdev-del', { 'node-name': s.node });
    this.sticks = this.sticks.filter((x) => x !== s);
  }

  // ---- artifacts ----

  /**
   * Copies serial and qemu logs of every boot into `dir` (default .artifacts/<name>/) and, when
   * the guest answers ssh, its journal of all boots (`journalctl -o json -b all`, journal.json).
   */
  async collectArtifacts(dir = this.artifactsDir): Promise<string> {
    await mkdir(dir, { recursive: true });
    for (const f of await readdir(this.workDir)) {
      if (/^(serial|qemu)-\d+\.log$/.test(f)) await copyFile(join(this.workDir, f), join(dir, f));
    }
    if (this.running && this.master && existsSync(this.controlPath)) {
      await this.sshToFile('journalctl -o json -b all --no-pager', join(dir, 'journal.json')).catch(
        async (e: Error) => {
          await writeFile(join(dir, 'journal-error.txt'), e.message);
        },
      );
      const boots = await this.ssh('journalctl --list-boots --no-pager', { timeoutMs: 60_000 }).catch(() => undefined);
      if (boots) await writeFile(join(dir, 'boots.txt'), boots.stdout + boots.stderr);
    } else {
      await writeFile(
        join(dir, 'journal-error.txt'),
        `${this.name}: journal not collected: the VM was not running or not reachable over ssh; the serial logs are the record\n`,
      );
    }
    return dir;
  }

  /** Streams a command's stdout into a host file (for large output such as the journal). */
  async sshToFile(cmd: string, file: string, timeoutMs = 300_000): Promise<void> {
    const child = track(
      spawn(
        'ssh',
        [...this.sshBaseArgs(), '-S', this.controlPath, '-o', 'ControlMaster=no', 'root@127.0.0.1', '--', cmd],
        {
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      ),
    );
    const out = createWriteStream(file);
    child.stdout!.pipe(out);
    let err = '';
    child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    const timer = setTimeout(() => void killAndWait(child), timeoutMs);
    const code = await new Promise<number | null>((r) => child.once('close', (c) => r(c)));
    clearTimeout(timer);
    await new Promise<void>((r) => (out.writableFinished ? r() : out.once('finish', () => r())));
    if (code !== 0) throw new Error(`${this.name}: \`${cmd}\` exited ${code}: ${err}`);
  }
}

/** Creates the work folder and disk for a scenario and spawns qemu. Call waitSsh() next. */
export async function bootVm(opts: BootOptions): Promise<Vm> {
  if (!/^[A-Za-z0-9._-]+$/.test(opts.name)) throw new Error(`bootVm: name must be a plain file name: ${opts.name}`);
  const base = await ensureBaseImage();
  const workDir = await mkdtemp(join(tmpdir(), `snovm-`));
  const src = resolve(opts.disk ?? base.disk);
  await stat(src);
  let disk: { path: string; format: 'qcow2' | 'raw' };
  if ((opts.diskMode ?? 'overlay') === 'overlay') {
    const overlay = join(workDir, 'disk.qcow2');
    await execOut('qemu-img', ['create', '-q', '-f', 'qcow2', '-F', 'raw', '-b', src, overlay]);
    disk = { path: overlay, format: 'qcow2' };
  } else {
    if (src === resolve(base.disk))
      throw new Error('bootVm: diskMode direct would write the cached base.raw; copyBaseDisk() first');
    disk = { path: src, format: 'raw' };
  }
  const vm = new Vm(opts, base, workDir, disk);
  try {
    await vm.start(opts.sticks ?? []);
  } catch (e) {
    await vm.dispose();
    throw e;
  }
  return vm;
}
