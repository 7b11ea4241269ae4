/**
 * The node steps that touch the kernel's network, for real, in a network namespace of their own
 * (`unshare -rn`: a user namespace gives the test the right to add a br-ex bridge there, without
 * touching this machine's network): the internal IP on br-ex, the dispatcher script putting it
 * back, and the gateway check that rolls a bad network back.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DISPATCHER_SCRIPT, renderDispatcherScript } from '../../src/node/internal-ip.js';
import { layFactoryNode } from '../fixtures/factory-node.js';
import { writeSiteFolder } from './cli.js';
import { REPO, stubEnvironment } from './context.js';
import { factoryNetwork } from './factory-network.js';

const netns = spawnSync('unshare', ['-rn', 'ip', 'link', 'add', 'probe0', 'type', 'bridge']);
const available = netns.status === 0;

const spec = (gateway: string) => ({
  baseDomain: 'store42.example.com',
  network: {
    nmstate: {
      interfaces: [
        {
          name: 'br-ex',
          type: 'ovs-interface',
          state: 'up',
          ipv4: { enabled: true, dhcp: false, address: [{ ip: '10.42.0.20', 'prefix-length': 24 }] },
        },
      ],
      routes: { config: [{ destination: '0.0.0.0/0', 'next-hop-address': gateway, 'next-hop-interface': 'br-ex' }] },
    },
    internalIP: '192.168.127.10/24',
    verify: { pingGateway: true, timeoutSeconds: 5 },
  },
});

interface NetnsRun {
  code: number;
  stderr: string;
  /** what the commands after the run printed, one entry per command */
  after: string[];
}

/** Runs the agent in a fresh network namespace holding a br-ex bridge, then the given commands there. */
function runInNetns(options: {
  gateway: string;
  setup?: string[];
  after?: string[];
  env?: Record<string, string>;
}): NetnsRun {
  const root = mkdtempSync(path.join(tmpdir(), 'netns-root-'));
  layFactoryNode(root);
  const out = mkdtempSync(path.join(tmpdir(), 'netns-out-'));
  const site = writeSiteFolder(path.join(out, 'site'), 'store-0042', spec(options.gateway));
  const env = { ...stubEnvironment(root), ...options.env };
  writeFileSync(env.NMSTATECTL_STUB_STATE!, JSON.stringify({ current: factoryNetwork() }));
  const script = [
    'set -e',
    'ip link set lo up',
    'ip link add br-ex type bridge',
    'ip link set br-ex up',
    ...(options.setup ?? []),
    'set +e',
    `"${process.execPath}" --import tsx "${REPO}/src/cli/main.ts" run "${site}" --root "${root}" --only network,internal-ip >"${out}/stdout" 2>"${out}/stderr"`,
    `echo $? >"${out}/code"`,
    ...(options.after ?? []).flatMap((command) => [command, 'echo ---']),
  ].join('\n');
  const result = spawnSync('unshare', ['-rn', 'sh', '-c', script], {
    cwd: REPO,
    encoding: 'utf8',
    env: { ...process.env, ...env, JOURNAL_STREAM: '', INVOCATION_ID: '' },
    timeout: 120_000,
  });
  if (result.status !== 0) throw new Error(`netns script failed (${result.status}): ${result.stderr}`);
  const after = result.stdout
    .split('---\n')
    .slice(0, -1)
    .map((s) => s.trim());
  return {
    code: Number(readFileSync(path.join(out, 'code'), 'utf8')),
    stderr: readFileSync(path.join(out, 'stderr'), 'utf8'),
    after,
  };
}

const addresses = (ipOutput: string) => [...ipOutput.matchAll(/inet (\S+)/g)].map((m) => m[1]);

describe.skipIf(!available)(
  `in a network namespace of its own${available ? '' : ' (unshare -rn is not permitted here)'}`,
  () => {
    it('puts the internal IP on br-ex at once, first, and the dispatcher script puts it back first when br-ex comes up', () => {
      const script = `"$NMSTATECTL_STUB_ROOT${DISPATCHER_SCRIPT}"`;
      const show = 'ip -4 -o addr show dev br-ex; ip -4 route show dev br-ex';
      const r = runInNetns({
        gateway: '10.42.0.1',
        // the site's gateway answers: here it is an address of the namespace itself; the site's
        // address comes first, as NetworkManager adds it before the dispatcher script runs
        setup: [
          'ip addr add 10.42.0.1/24 dev br-ex',
          'ip route add 198.51.100.0/24 via 10.42.0.1 dev br-ex proto static metric 425',
        ],
        after: [
          show,
          // a re-activation: the site's address comes back first, and a DHCP one has lifetimes
          `ip addr del 192.168.127.10/24 dev br-ex; ip addr del 10.42.0.1/24 dev br-ex; ip addr add 10.42.0.1/24 dev br-ex valid_lft 3600 preferred_lft 3600; ip route add 198.51.100.0/24 via 10.42.0.1 dev br-ex proto static metric 425; ${script} ens3 up; ${script} br-ex down; ${show}`,
          `${script} br-ex up && ${script} br-ex up && ${show}`,
          'ip -4 -o addr show dev br-ex to 10.42.0.1',
        ],
      });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).toContain('internal IP 192.168.127.10/24 added to br-ex, first');
      expect(addresses(r.after[0]!)).toEqual(['192.168.127.10/24', '10.42.0.1/24']);
      expect(r.after[0]).toMatch(/^198\.51\.100\.0\/24 via 10\.42\.0\.1 proto static metric 425/m);
      expect(addresses(r.after[1]!)).toEqual(['10.42.0.1/24']);
      expect(addresses(r.after[2]!)).toEqual(['192.168.127.10/24', '10.42.0.1/24']);
      // the routes through br-ex and the DHCP lease's lifetime survive the re-adding
      expect(r.after[2]).toMatch(/^198\.51\.100\.0\/24 via 10\.42\.0\.1 proto static metric 425/m);
      expect(Number(/valid_lft (\d+)sec/.exec(r.after[3]!)?.[1])).toBeGreaterThan(3000);
    });

    it('dual-stack: the dispatcher script puts each internal IP first of its own family, SLAAC lifetimes kept', () => {
      const dir = mkdtempSync(path.join(tmpdir(), 'netns-dual-'));
      const file = path.join(dir, 'dispatcher');
      writeFileSync(file, renderDispatcherScript(['fd69::10/64', '192.168.127.10/24']), { mode: 0o755 });
      const r = spawnSync(
        'unshare',
        [
          '-rn',
          'sh',
          '-c',
          [
            'set -e',
            'ip link set lo up',
            'ip link add br-ex type bridge',
            'ip link set br-ex up',
            // the site's addresses first, as NetworkManager adds them; the IPv6 one as SLAAC gives it
            'ip addr add 10.42.0.20/24 dev br-ex',
            'ip -6 addr add fd00:42::20/64 dev br-ex nodad valid_lft 3600 preferred_lft 1800',
            `"${file}" br-ex up`,
            `"${file}" br-ex up`,
            'ip -4 -o addr show dev br-ex scope global',
            'echo ---',
            'ip -6 -o addr show dev br-ex scope global',
          ].join('\n'),
        ],
        { encoding: 'utf8' },
      );
      expect(r.status, r.stderr).toBe(0);
      const [v4, v6] = r.stdout.split('---\n') as [string, string];
      expect([...v4.matchAll(/inet (\S+)/g)].map((m) => m[1])).toEqual(['192.168.127.10/24', '10.42.0.20/24']);
      expect([...v6.matchAll(/inet6 (\S+)/g)].map((m) => m[1])).toEqual(['fd69::10/64', 'fd00:42::20/64']);
      expect(Number(/fd00:42::20\/64.* valid_lft (\d+)sec/.exec(v6)?.[1])).toBeGreaterThan(3000);
    });

    it('rolls the network back when the gateway does not answer', () => {
      const r = runInNetns({ gateway: '10.42.0.1' });
      expect(r.code).toBe(1);
      expect(r.stderr).toContain('gateway 10.42.0.1 does not answer ping');
      expect(r.stderr).toContain('rolled back to the previous network');
    });

    it('rolls the network back when the change takes the internal IP off br-ex', () => {
      const r = runInNetns({
        gateway: '10.42.0.1',
        setup: ['ip addr add 10.42.0.1/24 dev br-ex', 'ip addr add 192.168.127.10/24 dev br-ex'],
        env: { NMSTATECTL_STUB_FLUSH_KERNEL: '1' },
      });
      expect(r.code).toBe(1);
      expect(r.stderr).toContain('the internal IP 192.168.127.10/24 is gone from br-ex');
      expect(r.stderr).toContain('rolled back to the previous network');
    });
  },
);
