/**
 * The agent's systemd units and udev rule, as a node gets them: `systemd-analyze verify` on each
 * (in a temporary root holding this machine's system units and stand-in executables), and the
 * dependency properties people rely on: a stick pulled out stops nothing, a node without a stick
 * does not stall its boot, kubelet is not ordered against the unit that starts it.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MOUNT_TYPES } from '../../src/config/discover.js';
import { REPO } from '../helpers/cli.js';

const SYSTEMD = path.join(REPO, 'systemd');
const UNITS = readdirSync(SYSTEMD).filter((f) => f.endsWith('.service') || f.endsWith('.path'));

/** `Key=value` lines of a unit, by section; repeated keys collect, space-separated lists split. */
function parseUnit(text: string): Record<string, Record<string, string[]>> {
  const out: Record<string, Record<string, string[]>> = {};
  let section = '';
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const header = /^\[(\w+)\]$/.exec(line);
    if (header) {
      section = header[1]!;
      out[section] ??= {};
      continue;
    }
    const [key, ...rest] = line.split('=');
    const values = rest.join('=').trim();
    (out[section]![key!.trim()] ??= []).push(...(values ? values.split(/\s+/) : []));
  }
  return out;
}

const unit = (name: string) => parseUnit(readFileSync(path.join(SYSTEMD, name), 'utf8'));

const LAYERED = path.join(SYSTEMD, 'layered');

/**
 * A root for `systemd-analyze verify --root`: this machine's system units, the agent's units in
 * /etc, and stand-in executables (systemd-analyze checks every ExecStart names one). With
 * `layered`, the OS image of the layering route: the binary in /usr/bin and the drop-ins of
 * systemd/layered/ in /usr/lib.
 */
function unitRoot(layered: boolean): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'units-'));
  mkdirSync(path.join(dir, 'usr/lib/systemd'), { recursive: true });
  cpSync('/usr/lib/systemd/system', path.join(dir, 'usr/lib/systemd/system'), { recursive: true });
  mkdirSync(path.join(dir, 'etc/systemd/system'), { recursive: true });
  for (const u of UNITS) cpSync(path.join(SYSTEMD, u), path.join(dir, 'etc/systemd/system', u));
  if (layered) cpSync(LAYERED, path.join(dir, 'usr/lib/systemd/system'), { recursive: true });
  for (const exe of [
    layered ? 'usr/bin/sno-relocate' : 'usr/local/bin/sno-relocate',
    'usr/local/libexec/sno-relocate-install',
    'usr/bin/systemctl',
  ]) {
    mkdirSync(path.dirname(path.join(dir, exe)), { recursive: true });
    writeFileSync(path.join(dir, exe), '#!/bin/sh\n');
    chmodSync(path.join(dir, exe), 0o755);
  }
  return dir;
}

function verify(dir: string, unitPath: string) {
  const result = spawnSync('systemd-analyze', ['verify', '--man=no', `--root=${dir}`, unitPath], { encoding: 'utf8' });
  return { output: `${result.stdout}${result.stderr}`, status: result.status };
}

let root: string;
let layeredRoot: string;
beforeAll(() => {
  root = unitRoot(false);
  layeredRoot = unitRoot(true);
});
afterAll(() => {
  for (const dir of [root, layeredRoot]) rmSync(dir, { recursive: true, force: true });
});

describe('systemd units', () => {
  it('has the agent, kubelet gate, watcher and installer units', () => {
    expect(UNITS.sort()).toEqual([
      'sno-relocate-gate.service',
      'sno-relocate-install.path',
      'sno-relocate-install.service',
      'sno-relocate-watch.service',
      'sno-relocate.service',
    ]);
  });

  it.each(UNITS)('systemd-analyze verify finds nothing to say about %s', (name) => {
    expect(verify(root, path.join(root, 'etc/systemd/system', name))).toEqual({ output: '', status: 0 });
  });

  it.each(UNITS)('systemd-analyze verify finds nothing to say about %s with the layered OS image drop-ins', (name) => {
    expect(verify(layeredRoot, path.join(layeredRoot, 'etc/systemd/system', name))).toEqual({ output: '', status: 0 });
  });

  it('systemd-analyze verify does catch a broken unit, so its silence means something', () => {
    const broken = path.join(root, 'etc/systemd/system/broken.service');
    writeFileSync(broken, '[Service]\nType=oneshot\nExecStart=/usr/local/bin/missing\nRestartSec=soon\n');
    expect(verify(root, broken).output).toMatch(/missing|RestartSec/);
    rmSync(broken);
  });

  describe('sno-relocate.service', () => {
    const agent = unit('sno-relocate.service');

    it('is a oneshot run of the agent that waits a bounded time for a site-config', () => {
      expect(agent.Service!.Type).toEqual(['oneshot']);
      expect(agent.Service!.ExecStart).toEqual(['/usr/local/bin/sno-relocate', 'run', '--wait', '900']);
      expect(Number(agent.Service!.TimeoutStartSec![0]!.replace('min', '')) * 60).toBeGreaterThan(900);
    });

    it('comes after NetworkManager and D-Bus, and never waits for network-online', () => {
      expect(agent.Unit!.After).toEqual(expect.arrayContaining(['NetworkManager.service', 'dbus.service']));
      expect([
        ...(agent.Unit!.After ?? []),
        ...(agent.Unit!.Wants ?? []),
        ...(agent.Unit!.Requires ?? []),
      ]).not.toContain('network-online.target');
    });

    it('does not hold up boot: no default dependencies, so multi-user.target is not ordered after it', () => {
      expect(agent.Unit!.DefaultDependencies).toEqual(['no']);
      expect(agent.Install!.WantedBy).toEqual(['multi-user.target']);
    });

    it('is bound to no stick: pulling it out stops neither the agent nor kubelet', () => {
      for (const key of ['Requires', 'BindsTo', 'PartOf', 'Requisite']) {
        expect(
          (agent.Unit![key] ?? []).filter((u) => /\.(mount|device)$/.test(u)),
          key,
        ).toEqual([]);
      }
    });

    it('is not ordered before kubelet, whose start job it waits for (that would deadlock)', () => {
      expect(agent.Unit!.Before ?? []).not.toContain('kubelet.service');
    });
  });

  describe('sno-relocate-gate.service', () => {
    const gate = unit('sno-relocate-gate.service');

    it('decides before kubelet starts, after the devices present at boot are known, and stays done', () => {
      expect(gate.Unit!.Before).toContain('kubelet.service');
      expect(gate.Unit!.After).toContain('systemd-udev-trigger.service');
      expect(gate.Service!.ExecStartPre).toEqual(['-/usr/bin/udevadm', 'settle', '--timeout=60']);
      expect(gate.Service!.ExecStart).toEqual(['/usr/local/bin/sno-relocate', 'gate']);
      expect(gate.Service!.Type).toEqual(['oneshot']);
      expect(gate.Service!.RemainAfterExit).toEqual(['yes']);
    });

    it('waits for no network and no other agent unit', () => {
      const deps = [...(gate.Unit!.After ?? []), ...(gate.Unit!.Wants ?? []), ...(gate.Unit!.Requires ?? [])];
      expect(deps.filter((u) => /network|sno-relocate|NetworkManager/.test(u))).toEqual([]);
      expect(gate.Service!.IPAddressDeny).toEqual(['any']);
    });
  });

  describe('sno-relocate.service restarts', () => {
    const agent = unit('sno-relocate.service');

    it('retries failed steps but not an invalid or refused site-config', () => {
      expect(agent.Service!.Restart).toEqual(['on-failure']);
      expect(agent.Service!.RestartPreventExitStatus).toEqual(['2', '3']);
      expect(agent.Service!.RemainAfterExit).toEqual(['no']);
      // 10 starts need at least 9 waits of RestartSec: only runs that fail at once reach the limit
      expect(agent.Unit!.StartLimitIntervalSec).toEqual(['10min']);
      expect(agent.Unit!.StartLimitBurst).toEqual(['10']);
      expect(9 * Number(agent.Service!.RestartSec![0])).toBeLessThan(10 * 60);
    });

    it('is sandboxed, keeping only the capabilities its steps use', () => {
      expect(agent.Service!.CapabilityBoundingSet!.sort()).toEqual(
        [
          'CAP_CHOWN',
          'CAP_DAC_OVERRIDE',
          'CAP_DAC_READ_SEARCH',
          'CAP_FOWNER',
          'CAP_NET_ADMIN',
          'CAP_NET_RAW',
          'CAP_SYS_ADMIN',
        ].sort(),
      );
      expect(agent.Service!.NoNewPrivileges).toEqual(['yes']);
      expect(agent.Service!.ProtectSystem).toEqual(['strict']);
      for (const on of ['ProtectKernelModules', 'ProtectKernelLogs', 'RestrictSUIDSGID'])
        expect(agent.Service![on], on).toEqual(['yes']);
      expect(agent.Service!.UMask).toEqual(['0077']);
      expect(agent.Service!.MemoryMax).toEqual(['512M']);
    });

    it('says why for every sandbox setting it leaves off', () => {
      const text = readFileSync(path.join(SYSTEMD, 'sno-relocate.service'), 'utf8');
      for (const off of ['MemoryDenyWriteExecute', 'PrivateDevices', 'ProtectHostname'])
        expect(text).toMatch(new RegExp(`# No ${off}: \\S`));
      expect(text).toMatch(/# ssh-keys reads core's home[^\n]*\nProtectHome=no/);
      // every writable folder with the step that writes it
      expect(text).toMatch(
        /# ssh-keys: core's \.ssh [^\n]*\n#[^\n]*\nReadWritePaths=-\/home\/core -\/var\/home\/core -\/etc\/ssh\/sshd_config\.d\n/,
      );
    });
  });

  it('holds up no boot: no unit multi-user.target waits for is ordered after the agent, which may wait for a stick', () => {
    const waitedFor = readdirSync(SYSTEMD)
      .filter((name) => name.endsWith('.service'))
      .filter((name) => unit(name).Install?.WantedBy?.includes('multi-user.target'))
      .filter((name) => !unit(name).Unit?.DefaultDependencies?.includes('no'));
    expect(waitedFor).toContain('sno-relocate-watch.service');
    expect(waitedFor.filter((name) => unit(name).Unit?.After?.includes('sno-relocate.service'))).toEqual([]);
  });

  it('runs the watcher read-only, reached from loopback and the pod network only, and restarts it always', () => {
    const watch = unit('sno-relocate-watch.service');
    expect(watch.Service!.ExecStart).toEqual([
      '/usr/local/bin/sno-relocate',
      'watch',
      '--metrics-address',
      '0.0.0.0:9464',
    ]);
    expect(watch.Service!.Restart).toEqual(['always']);
    expect(watch.Unit!.StartLimitIntervalSec).toEqual(['0']);
    expect(watch.Service!.ProtectSystem).toEqual(['strict']);
    // its state folder is made by systemd on a node no run has touched, so the namespace set-up cannot fail
    expect(watch.Service!.StateDirectory).toEqual(['sno-relocate']);
    expect(watch.Service!.StateDirectoryMode).toEqual(['0700']);
    expect(watch.Service!.ReadWritePaths).toBeUndefined();
    expect(watch.Service!.IPAddressDeny).toEqual(['any']);
    // the installer's default clusterNetwork: where the platform Prometheus scrapes from
    expect(watch.Service!.IPAddressAllow).toEqual(['localhost', '10.128.0.0/14']);
    expect(watch.Service!.CapabilityBoundingSet).toEqual([]);
    expect([watch.Service!.UMask, watch.Service!.MemoryMax]).toEqual([['0077'], ['256M']]);
  });

  it('runs the watcher with the memory settings its idle size was measured with', () => {
    // bench/watch.ts starts the watcher with this unit's Environment=; without it, it idles about 8 MB larger
    expect(unit('sno-relocate-watch.service').Service!.Environment).toEqual([
      'SNO_RELOCATE_UNIT=sno-relocate-watch.service',
      'MALLOC_MMAP_THRESHOLD_=16384',
    ]);
  });

  it('runs the installer at every boot and whenever install.env changes, the agent after it', () => {
    const install = unit('sno-relocate-install.service');
    expect(install.Unit!.ConditionPathExists).toEqual(['/etc/sno-relocate/install.env']);
    // a path unit cannot start a oneshot that stays active
    expect(install.Service!.RemainAfterExit).toEqual(['no']);
    expect(install.Service!.ExecStartPost).toBeUndefined();
    const trigger = unit('sno-relocate-install.path');
    expect(trigger.Path!.PathChanged).toEqual(['/etc/sno-relocate/install.env']);
    expect(trigger.Path!.Unit).toEqual(['sno-relocate-install.service']);
    // at a boot after an image change the new agent handles the stick; the installer itself is not
    // ordered after network-online.target (it waits for the network only to pull), so the agent never is
    expect(unit('sno-relocate.service').Unit!.After).toContain('sno-relocate-install.service');
    expect(install.Unit!.After ?? []).not.toContain('network-online.target');
  });

  it('the installer script is valid bash and refuses to run without an image', () => {
    const script = path.join(SYSTEMD, 'sno-relocate-install');
    execFileSync('bash', ['-n', script]);
    const result = spawnSync('bash', [script], { encoding: 'utf8', env: { PATH: process.env.PATH } });
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain('set SNO_RELOCATE_IMAGE in /etc/sno-relocate/install.env');
    // a tag can be moved to other content after the factory tested it: only a digest is pulled
    const tagged = spawnSync('bash', [script], {
      encoding: 'utf8',
      env: { PATH: process.env.PATH, SNO_RELOCATE_IMAGE: 'registry.example.com/agent:0.1.0' },
    });
    expect(tagged.status).toBe(2);
    expect(tagged.stderr).toContain(
      'SNO_RELOCATE_IMAGE must name the image by digest (...@sha256:<64 hex digits>): registry.example.com/agent:0.1.0',
    );
  });
});

describe('layered OS image (machineconfigs/Containerfile)', () => {
  const dropIn = (name: string) => parseUnit(readFileSync(path.join(LAYERED, `${name}.d`, '10-layered.conf'), 'utf8'));

  it.each(['sno-relocate.service', 'sno-relocate-watch.service'])(
    'runs %s from /usr/bin with the same arguments',
    (name) => {
      const [exe, ...args] = unit(name).Service!.ExecStart!;
      expect(exe).toBe('/usr/local/bin/sno-relocate');
      // an empty ExecStart= clears the unit's own before the drop-in sets its one
      expect(dropIn(name).Service!.ExecStart).toEqual(['/usr/bin/sno-relocate', ...args]);
    },
  );

  it('starts the agent only where the image has the binary, and the installer never fetches it', () => {
    expect(dropIn('sno-relocate.service').Unit!.ConditionPathExists).toEqual(['/usr/bin/sno-relocate']);
    expect(dropIn('sno-relocate-install.service').Unit!.ConditionPathExists).toEqual(['!/usr/bin/sno-relocate']);
  });

  it('bakes the binary, the units and their drop-ins in, enables them and commits', () => {
    const containerfile = readFileSync(path.join(REPO, 'machineconfigs/Containerfile'), 'utf8');
    expect(containerfile).toMatch(/^FROM configs AS final$/m);
    expect(containerfile).toContain('COPY --from=agent /usr/local/bin/sno-relocate /usr/bin/sno-relocate');
    expect(containerfile).toContain(
      'COPY --from=agent /usr/share/sno-relocate/systemd/layered/ /usr/lib/systemd/system/',
    );
    expect(containerfile).toMatch(
      /systemctl enable sno-relocate\.service sno-relocate-watch\.service sno-relocate-gate\.service && \\\n\s*ostree container commit\n$/,
    );
  });
});

describe('udev rule', () => {
  const rule = readFileSync(path.join(SYSTEMD, '99-sno-relocate.rules'), 'utf8')
    .split('\n')
    .filter((l) => l.trim() && !l.startsWith('#'));

  const keysOf = (line: string) =>
    Object.fromEntries(
      line
        .split(/,\s*/)
        .map((p) => /^(.+?)(==|\+=|=)"(.*)"$/.exec(p)!.slice(1))
        .map(([k, op, v]) => [k, [op, v]]),
    );
  const wants = {
    SUBSYSTEM: ['==', 'block'],
    'ENV{ID_FS_LABEL}': ['==', 'cluster-config|relocation-config'],
    // the types the agent mounts, and no other
    'ENV{ID_FS_TYPE}': ['==', MOUNT_TYPES.join('|')],
    TAG: ['+=', 'systemd'],
    'ENV{SYSTEMD_WANTS}': ['+=', 'sno-relocate.service'],
  };

  it('wants the agent when a vfat, ISO 9660 or ext4 filesystem labelled cluster-config or relocation-config is added', () => {
    expect(rule).toHaveLength(2);
    expect(keysOf(rule[0]!)).toEqual({ ACTION: ['==', 'add'], ...wants });
  });

  it('wants it too when such a medium is inserted into a drive already there (a virtual CD), on no other change', () => {
    expect(keysOf(rule[1]!)).toEqual({ ACTION: ['==', 'change'], 'ENV{DISK_MEDIA_CHANGE}': ['==', '1'], ...wants });
  });
});
