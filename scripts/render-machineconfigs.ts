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
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type AgentSources, machineConfigYaml, type MachineConfigOptions, renderMachineConfigs } from '../src/node/machineconfig.js';

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const DEFAULT_INTERNAL_IP = '192.168.127.10/24';
export const DEFAULT_IMAGE = 'registry.factory.example.com:5000/sno-relocate/agent:0.1.0';

export function agentSources(dir = path.join(REPO, 'systemd')): AgentSources {
  const read = (name: string) => readFileSync(path.join(dir, name), 'utf8');
  const units = Object.fromEntries(
    readdirSync(dir)
      .filter((n) => n.endsWith('.service'))
      .map((n) => [n, read(n)]),
  );
  return { units, udevRule: read('99-sno-relocate.rules'), installScript: read('sno-relocate-install') };
}

export function optionsFromEnv(env: NodeJS.ProcessEnv): MachineConfigOptions {
  const trustDir = env.SNO_RELOCATE_TRUST_DIR;
  const trustAnchors = trustDir
    ? Object.fromEntries(
        readdirSync(trustDir)
          .filter((n) => n.endsWith('.pub'))
          .map((n) => [n, readFileSync(path.join(trustDir, n), 'utf8')]),
      )
    : undefined;
  return { internalIP: env.SNO_RELOCATE_INTERNAL_IP ?? DEFAULT_INTERNAL_IP, image: env.SNO_RELOCATE_IMAGE ?? DEFAULT_IMAGE, trustAnchors };
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
  if (!outDir) throw new Error('usage: render-machineconfigs.ts OUTDIR');
  const written = writeMachineConfigs(outDir, optionsFromEnv(process.env));
  const total = written.reduce((sum, w) => sum + w.bytes, 0);
  for (const w of written) console.log(`  ${w.file}: ${(w.bytes / 1024).toFixed(1)} KiB`);
  console.log(`  MachineConfigs in all: ${(total / 1024).toFixed(1)} KiB (limit 256 KiB)`);
}
