/**
 * Renders the factory MachineConfigs into OUTDIR (build.sh: machineconfigs/) from the unit files
 * in systemd/ and the internal-IP renderers the agent itself uses, so the node gets byte-identical
 * files either way. `npx tsx scripts/render-machineconfigs.ts OUTDIR`
 *
 * Settings (environment):
 *   SNO_RELOCATE_INTERNAL_IP  the br-ex internal node IP, default 192.168.127.10/24
 *   SNO_RELOCATE_IMAGE        the agent's container image for the binary installer
 *   SNO_RELOCATE_TRUST_DIR    a folder of *.pub signing keys to install as trust anchors
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { agentSources as readAgentSources } from '../src/factory/agent-sources.js';
import { checkImage, checkInternalIP, DEFAULT_INTERNAL_IP, readTrustAnchors } from '../src/factory/options.js';
import {
  type AgentSources,
  machineConfigPayloads,
  machineConfigYaml,
  type MachineConfigOptions,
  type Payload,
  renderMachineConfigs,
} from '../src/node/machineconfig.js';

export { DEFAULT_INTERNAL_IP };
export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const DEFAULT_IMAGE =
  'registry.factory.example.com:5000/sno-relocate/agent@sha256:0b4d6a7c3e2f1a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b';

export function optionsFromEnv(env: NodeJS.ProcessEnv): MachineConfigOptions {
  return {
    internalIP: checkInternalIP('SNO_RELOCATE_INTERNAL_IP', env.SNO_RELOCATE_INTERNAL_IP ?? DEFAULT_INTERNAL_IP),
    image: checkImage('SNO_RELOCATE_IMAGE', env.SNO_RELOCATE_IMAGE ?? DEFAULT_IMAGE),
    ...(env.SNO_RELOCATE_TRUST_DIR
      ? { trustAnchors: readTrustAnchors('SNO_RELOCATE_TRUST_DIR', env.SNO_RELOCATE_TRUST_DIR) }
      : {}),
  };
}

/** The units and scripts of systemd/ in this repository. */
export const agentSources = (dir = path.join(REPO, 'systemd')): AgentSources => readAgentSources(dir);

/**
 * The files and units the MachineConfigs carry, decoded, for images built without the Machine
 * Config Operator; settings as for the render (environment), defaults otherwise.
 */
export function factoryPayloads(env: NodeJS.ProcessEnv = {}): Payload[] {
  return machineConfigPayloads(agentSources(), optionsFromEnv(env));
}

/** Writes one YAML file per MachineConfig; returns their names and sizes. */
export function writeMachineConfigs(outDir: string, options: MachineConfigOptions): { file: string; bytes: number }[] {
  mkdirSync(outDir, { recursive: true });
  return renderMachineConfigs(agentSources(), options).map((mc) => {
    const text = machineConfigYaml(mc);
    const file = `${mc.metadata.name}.yaml`;
    writeFileSync(path.join(outDir, file), text);
    return { file, bytes: Buffer.byteLength(text) };
  });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const outDir = process.argv[2];
  try {
    if (!outDir) throw new Error('usage: render-machineconfigs.ts OUTDIR');
    const written = writeMachineConfigs(outDir, optionsFromEnv(process.env));
    const total = written.reduce((sum, w) => sum + w.bytes, 0);
    for (const w of written) console.log(`  ${w.file}: ${(w.bytes / 1024).toFixed(1)} KiB`);
    console.log(`  MachineConfigs in all: ${(total / 1024).toFixed(1)} KiB (limit 256 KiB)`);
  } catch (err) {
    console.error(`render-machineconfigs: ${(err as Error).message}`);
    process.exitCode = 1;
  }
}
