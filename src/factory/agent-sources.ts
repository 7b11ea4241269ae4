/**
 * The agent's units, udev rule and installer script (systemd/ of this repository), from which the
 * factory MachineConfigs are rendered. `./build.sh` embeds them in the single executable as one
 * asset, so `factory prepare` renders on a node exactly what scripts/render-machineconfigs.ts
 * renders from the repository; run from source or from the bundle, they are read from the folder.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { getAsset, isSea } from 'node:sea';
import type { AgentSources } from '../node/machineconfig.js';

/** the single executable's asset holding AgentSources as JSON (build.sh) */
export const SOURCES_ASSET = 'agent-sources.json';

/** The units (every *.service and *.path), the udev rule and the installer script of a systemd/ folder. */
export function agentSources(dir: string): AgentSources {
  const read = (name: string) => readFileSync(path.join(dir, name), 'utf8');
  const units = Object.fromEntries(
    readdirSync(dir)
      .filter((n) => n.endsWith('.service') || n.endsWith('.path'))
      .sort()
      .map((n) => [n, read(n)]),
  );
  return { units, udevRule: read('99-sno-relocate.rules'), installScript: read('sno-relocate-install') };
}

/** The repository's systemd/ folder above `from`, or undefined outside a checkout. */
function repositoryUnits(from: string): string | undefined {
  for (let dir = from; ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'systemd');
    if (existsSync(path.join(candidate, 'sno-relocate.service'))) return candidate;
    if (path.dirname(dir) === dir) return undefined;
  }
}

/** The sources this executable carries (or, from source, the checkout's). */
export function bundledAgentSources(): AgentSources {
  if (isSea()) return JSON.parse(getAsset(SOURCES_ASSET, 'utf8')) as AgentSources;
  const dir = repositoryUnits(path.dirname(path.resolve(process.argv[1] ?? '.')));
  if (!dir) throw new Error("the agent's units are not bundled here: run the executable ./build.sh makes");
  return agentSources(dir);
}
