/**
 * `factory prepare | check | seal`: the factory end. `prepare` makes the cluster relocatable (on its
 * running node, or as manifests for the installer), `check` says whether the node is fit to ship,
 * `seal` puts a fit node in its shipping state. See src/factory/.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { errorMessage, ExitCode, RefusedError, UsageError } from '../../base/errors.js';
import { parseYamlDocument } from '../../config/yaml.js';
import { bundledAgentSources } from '../../factory/agent-sources.js';
import { checkFactoryNode, type CheckReport, renderCheck } from '../../factory/check.js';
import { checkImage, checkInternalIPs, readTrustAnchors } from '../../factory/options.js';
import { type AppliedConfig, installManifests, prepareNode, type PrepareResult } from '../../factory/prepare.js';
import { installConfigPreconditions } from '../../factory/preconditions.js';
import { makeRecord, recordedFamilies, recordText } from '../../node/factory-record.js';
import { sealNode } from '../../factory/seal.js';
import type { Shipment } from '../../node/shipment.js';
import { FACTORY_RECORD } from '../../base/node-files.js';
import { machineConfigYaml, type MachineConfigOptions } from '../../node/machineconfig.js';
import type { Kube } from '../../ports/kube.js';
import { acquireRunLock } from '../../ports/run-lock.js';
import { type Invocation, oneOf } from '../args.js';
import type { OptionsOf } from './options.js';
import { createRuntime, kubeconfigPath, type Runtime } from '../runtime.js';
import type { CommandResult } from './result.js';

const API_WAIT_MS = 30_000;

type Format = 'text' | 'json';
type Prepare = Invocation<OptionsOf<'factory prepare'>>;

const json = (value: unknown): string => `${JSON.stringify(value, null, 2)}\n`;

/** A setting checked by src/factory/options.ts; its error (naming the flag) is a usage error. */
function usage<T>(check: () => T): T {
  try {
    return check();
  } catch (err) {
    throw new UsageError(errorMessage(err));
  }
}

function machineConfigOptions(inv: Prepare): Omit<MachineConfigOptions, 'internalIP'> {
  const { image, trust } = inv.flags;
  return {
    ...(image !== undefined && { image: usage(() => checkImage('--image', image)) }),
    ...(trust !== undefined && { trustAnchors: usage(() => readTrustAnchors('--trust', trust)) }),
  };
}

async function connect(rt: Runtime): Promise<Kube> {
  const { connectKube } = await import('../../kube/client.js');
  return connectKube(await kubeconfigPath(rt), rt.log, { readyTimeoutMs: API_WAIT_MS });
}

const REBOOT_NOTE: Record<AppliedConfig['disruption'], string> = {
  none: 'no reboot',
  'reload crio': 'CRI-O reloaded, no reboot',
  'restart crio': 'CRI-O restarted, no reboot',
  reboot: 'REBOOT',
};

function renderPrepared(result: PrepareResult): string {
  const { record } = result;
  const lines = [
    `node ${result.node}: install address ${recordedFamilies(record)
      .map((f) => f.installAddress)
      .join(' and ')} on br-ex ${recordedFamilies(record).length > 1 ? 'are the internal IPs' : 'is the internal IP'}`,
    'preconditions met: one node, OVN-Kubernetes, platform none',
    ...recordedFamilies(record).map(
      (f) => `recorded in ${FACTORY_RECORD}: internal IP ${f.internalIP}, install subnet ${f.installSubnet}`,
    ),
    `node key ${result.nodeKey.recipient} (${result.nodeKey.sealing === 'tpm2' ? "sealed to the node's TPM2" : 'sealed with the host key: this node has no TPM2'}): put it in the inventory's node-key column`,
    'kubelet gate open for the factory until factory seal',
    ...result.configs.map(
      (c) =>
        `MachineConfig ${c.name}: ${c.action === 'unchanged' ? 'unchanged, nothing to apply' : `${c.action}d; ${REBOOT_NOTE[c.disruption]}: ${c.because}`}`,
    ),
  ];
  const reboots = result.configs.filter((c) => c.action !== 'unchanged' && c.disruption === 'reboot');
  lines.push(
    reboots.length
      ? `the Machine Config Operator renders ${reboots.length > 1 ? 'these into one config' : 'it into a new config'} and the node reboots once to apply it; then run: sno-relocate factory check`
      : 'nothing to apply: the node already runs these MachineConfigs',
  );
  return `${lines.join('\n')}\n`;
}

async function prepareManifests(inv: Prepare, format: Format, dir: string): Promise<CommandResult> {
  const { 'install-config': installConfig, 'internal-ip': internalIP } = inv.flags;
  if (!installConfig || !internalIP)
    throw new UsageError(
      'factory prepare --manifests DIR needs --install-config FILE (checked for a relocatable cluster) and --internal-ip CIDR (the address the installation gives br-ex)',
    );
  // one address per family of the cluster, its primary family first (comma-separated)
  const ips = usage(() => checkInternalIPs('--internal-ip', internalIP));
  let doc: unknown;
  try {
    doc = parseYamlDocument(await readFile(installConfig), installConfig);
  } catch (err) {
    throw new UsageError(`--install-config: ${errorMessage(err)}`);
  }
  const unmet = ips.flatMap((ip) => installConfigPreconditions(doc, ip));
  if (unmet.length)
    throw new RefusedError(
      `${installConfig} is not a relocatable cluster; unmet: ${unmet.map((u, i) => `(${i + 1}) ${u}`).join('; ')}; nothing was written`,
    );
  // no node yet: the record names the address the installation gives br-ex, and the node has it from its first boot
  const record = makeRecord(undefined, ips, new Date());
  const configs = installManifests(bundledAgentSources(), {
    ...machineConfigOptions(inv),
    internalIP: ips,
    factoryRecord: recordText(record),
  });
  await mkdir(dir, { recursive: true });
  const files: string[] = [];
  for (const mc of configs) {
    const file = path.join(dir, `${mc.metadata.name}.yaml`);
    await writeFile(file, machineConfigYaml(mc));
    files.push(file);
  }
  const text = [
    ...files.map((f) => `wrote ${f}`),
    `internal IP ${ips.join(' and ')}; the installer applies them at the first boot (no extra reboot)`,
    `${FACTORY_RECORD} comes with them: install subnet ${recordedFamilies(record)
      .map((f) => f.installSubnet)
      .join(' and ')}, which validate, plan and run hold a site-config's internalIP to from the first boot`,
    'the kubelet gate is left out, so the installation can start kubelet: once installed, run factory prepare on the node to arm it (one reboot)',
  ];
  return {
    exitCode: ExitCode.ok,
    stdout:
      format === 'json'
        ? json({ manifests: files, internalIP: ips.join(','), record, gate: false })
        : `${text.join('\n')}\n`,
  };
}

/**
 * prepare and seal write the node's state folder (seal clears it): one at a time, and never beside a
 * run, so they hold the run lock and refuse, changing nothing, while another holds it.
 */
async function holdingRunLock<T>(rt: Runtime, work: () => Promise<T>): Promise<T> {
  const lock = await acquireRunLock(rt.fs, rt.stateDir);
  try {
    return await work();
  } finally {
    await lock.release();
  }
}

async function prepare(inv: Prepare, format: Format): Promise<CommandResult> {
  if (inv.flags.manifests !== undefined) return prepareManifests(inv, format, inv.flags.manifests);
  for (const flag of ['internal-ip', 'install-config'] as const)
    if (inv.flags[flag] !== undefined)
      throw new UsageError(
        `--${flag} is for --manifests (before installation); on the node the internal IP is br-ex's install address`,
      );
  const rt = createRuntime(inv.flags);
  return holdingRunLock(rt, () => prepareLocked(inv, format, rt));
}

async function prepareLocked(inv: Prepare, format: Format, rt: Runtime): Promise<CommandResult> {
  const options = machineConfigOptions(inv);
  const kube = await connect(rt);
  const result = await prepareNode({
    fs: rt.fs,
    exec: rt.exec,
    kube,
    clock: rt.clock,
    stateDir: rt.stateDir,
    sources: bundledAgentSources(),
    options,
    requireTpm: inv.flags['require-tpm'] === true,
  });
  rt.log.info({ node: result.node, internalIP: result.installAddress }, 'factory prepare: node prepared');
  if (!options.image)
    rt.log.warn(
      'no --image: sno-relocate-install.service has nothing to install; put the executable at /usr/local/bin/sno-relocate or bake it into the OS image',
    );
  return { exitCode: ExitCode.ok, stdout: format === 'json' ? json(result) : renderPrepared(result) };
}

/** what check and seal share; only check takes --require-tpm */
async function check(
  inv: Invocation<OptionsOf<'factory check'> & OptionsOf<'factory seal'>>,
  requireTpm: boolean,
  rt: Runtime = createRuntime(inv.flags),
): Promise<{ rt: Runtime; report: CheckReport }> {
  const report = await checkFactoryNode({
    fs: rt.fs,
    kube: await connect(rt),
    clock: rt.clock,
    log: rt.log,
    stateDir: rt.stateDir,
    sources: bundledAgentSources(),
    shelfDays: inv.flags['shelf-days'],
    requireTpm,
  });
  return { rt, report };
}

const checkResult = (report: CheckReport, format: Format, extra = ''): CommandResult => ({
  exitCode: report.fit ? ExitCode.ok : ExitCode.stepFailed,
  stdout: format === 'json' ? json(report) : `${renderCheck(report)}${extra}`,
});

async function seal(inv: Invocation<OptionsOf<'factory seal'>>, format: Format): Promise<CommandResult> {
  const rt = createRuntime(inv.flags);
  return holdingRunLock(rt, () => sealLocked(inv, format, rt));
}

async function sealLocked(
  inv: Invocation<OptionsOf<'factory seal'>>,
  format: Format,
  rt: Runtime,
): Promise<CommandResult> {
  const { report } = await check(inv, false, rt);
  if (!report.fit) return checkResult(report, format, 'not sealed: nothing on the node was changed\n');
  const { powerOnBy } = report;
  const early =
    powerOnBy && Date.parse(powerOnBy.date) < Date.parse(report.arrival)
      ? [
          `power-on-by: ${powerOnBy.date.slice(0, 10)} comes before the planned arrival ${report.arrival.slice(0, 10)} (${report.shelfDays} days on the shelf)`,
        ]
      : [];
  const shipment: Shipment = {
    shippedAt: rt.clock.now().toISOString(),
    shelfDays: report.shelfDays,
    warnings: [...report.checks.filter((c) => c.verdict === 'warning').map((c) => `${c.check}: ${c.detail}`), ...early],
    ...(powerOnBy && { powerOnBy }),
  };
  const cleared = await sealNode(rt.fs, rt.stateDir, shipment);
  rt.log.info({ shippedAt: shipment.shippedAt, powerOnBy: powerOnBy?.date }, 'factory seal: node sealed for shipment');
  const powerOff = inv.flags['power-off'] === true;
  const text = `${renderCheck(report)}sealed at ${shipment.shippedAt}: ${cleared.length ? `cleared ${cleared.join(', ')} from ${rt.stateDir}` : `${rt.stateDir} was empty`}; the kubelet gate is closed for the next boot\n${early.map((w) => `WARNING ${w}\n`).join('')}${powerOff ? 'powering off now: poweroff.target over D-Bus\n' : ''}`;
  return {
    exitCode: ExitCode.ok,
    stdout: format === 'json' ? json({ ...report, sealed: { ...shipment, cleared, powerOff } }) : text,
    // the report first: the power off ends the session that reads it
    ...(powerOff && {
      afterOutput: async () => {
        // as `systemctl poweroff` and logind do: poweroff.target, replace-irreversibly, not waited for
        const { connectSystemdBus } = await import('../../ports/systemd-dbus.js');
        const systemd = await connectSystemdBus(rt.log);
        try {
          await systemd.powerOff();
        } finally {
          systemd.close();
        }
      },
    }),
  };
}

export async function factoryCommand(
  inv: Invocation<OptionsOf<'factory prepare' | 'factory check' | 'factory seal'>>,
): Promise<CommandResult> {
  const format = oneOf('-o', inv.flags.output, ['text', 'json'] as const, 'text');
  const [sub, ...rest] = inv.positionals;
  if (rest.length) throw new UsageError(`factory ${sub} takes no PATH, got ${rest.join(' ')}`);
  if (sub === 'prepare') return prepare(inv, format);
  if (sub === 'check') return checkResult((await check(inv, inv.flags['require-tpm'])).report, format);
  if (sub === 'seal') return seal(inv, format);
  throw new UsageError(`factory needs prepare, check or seal, got ${sub ?? 'nothing'}; run 'sno-relocate --help'`);
}
