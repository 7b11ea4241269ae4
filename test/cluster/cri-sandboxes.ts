/**
 * CRI-O's pod sandboxes as `crictl` sees them, for tests of the node on a temporary root: each
 * sandbox is a real process (what ovnkube-node or multus would be) started by the test, and a
 * stand-in `crictl` on PATH lists them (`pods --quiet`), stops them (`stopp`: the process is killed
 * and waited for, as CRI-O stops a sandbox's containers) and removes them (`rmp`). crictl is the
 * boundary: there is no CRI-O here.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const CRICTL = `#!/bin/sh
case "$1" in
  pods) [ "$2" = --quiet ] || exit 1; ls "$CRICTL_PODS" ;;
  stopp) shift
    for id; do
      pid=$(cat "$CRICTL_PODS/$id") || exit 1
      kill "$pid" 2>/dev/null
      # stopped means its process is gone, as CRI-O reports a stopped sandbox
      while [ -d "/proc/$pid" ] && ! grep -q '^State:.*Z' "/proc/$pid/status" 2>/dev/null; do sleep 0.05; done
      echo "Stopped sandbox $id"
    done ;;
  rmp) shift; for id; do rm -f "$CRICTL_PODS/$id"; echo "Removed sandbox $id"; done ;;
  *) echo "crictl stand-in: $*: not served" >&2; exit 1 ;;
esac
`;

export interface CriSandboxes {
  /** starts a sandbox whose process runs `script` (sh) with `args`; returns its process */
  run(name: string, script: string, args: string[]): ChildProcess;
  /** the sandboxes crictl still lists */
  listed(): string[];
  stop(): void;
}

export function startCriSandboxes(): CriSandboxes {
  const dir = mkdtempSync(path.join(tmpdir(), 'cri-'));
  const bin = path.join(dir, 'bin');
  const pods = path.join(dir, 'pods');
  mkdirSync(bin);
  mkdirSync(pods);
  writeFileSync(path.join(bin, 'crictl'), CRICTL);
  chmodSync(path.join(bin, 'crictl'), 0o755);
  const before = { PATH: process.env.PATH, CRICTL_PODS: process.env.CRICTL_PODS };
  process.env.PATH = `${bin}:${process.env.PATH ?? ''}`;
  process.env.CRICTL_PODS = pods;
  const children: ChildProcess[] = [];
  return {
    run(name, script, args) {
      const child = spawn('sh', ['-c', script, 'sandbox', ...args], { stdio: 'ignore' });
      children.push(child);
      writeFileSync(path.join(pods, name), `${child.pid}\n`);
      return child;
    },
    listed: () => readdirSync(pods),
    stop() {
      for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
      process.env.PATH = before.PATH;
      if (before.CRICTL_PODS === undefined) delete process.env.CRICTL_PODS;
      else process.env.CRICTL_PODS = before.CRICTL_PODS;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
