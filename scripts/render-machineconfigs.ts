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
import { parseCidr } from '../src/base/addresses.js';
import {
  type AgentSources,
  machineConfigPayloads,
  machineConfigYaml,
  type MachineConfigOptions,
  type Payload,
  renderMachineConfigs,
} from '../src/node/machineconfig.js';
import { readPublicKey } from '../src/trust/signature.js';

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const DEFAULT_INTERNAL_IP = '192.168.127.10/24';
export const DEFAULT_IMAGE =
  'registry.factory.example.com:5000/sno-relocate/agent@sha256:0b4d6a7c3e2f1a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b';

export function agentSources(dir = path.join(REPO, 'systemd')): AgentSources {
  const read = (name: string) => readFileSync(path.join(dir, name), 'utf8');
  const units = Object.fromEntries(
    readdirSync(dir)
      .filter((n) => n.endsWith('.service'))
      .map((n) => [n, read(n)]),
  );
  return { units, udevRule: read('99-sno-relocate.rules'), installScript: read('sno-relocate-install') };
}

function internalIP(value: string): string {
  const invalid = new Error(
    `SNO_RELOCATE_INTERNAL_IP: not an IP address with prefix length (CIDR), e.g. ${DEFAULT_INTERNAL_IP}: ${JSON.stringify(value)}`,
  );
  if (!value.includes('/')) throw invalid;
  try {
    parseCidr(value);
  } catch {
    throw invalid;
  }
  return value;
}

// the reference goes into install.env, read by systemd: one line of reference characters only
const IMAGE_REFERENCE = /^[a-z0-9][\w.\-/:@]*$/i;
// pinned by digest, as the installer requires: a tag could be moved after the factory tested the image
const BY_DIGEST = /@sha256:[0-9a-f]{64}$/;

function image(value: string): string {
  if (!IMAGE_REFERENCE.test(value))
    throw new Error(`SNO_RELOCATE_IMAGE: not a container image reference: ${JSON.stringify(value)}`);
  if (!BY_DIGEST.test(value))
    throw new Error(`SNO_RELOCATE_IMAGE: name the image by digest (...@sha256:<64 hex digits>): ${value}`);
  return value;
}

/** Every *.pub of the folder, each checked to be a public key the agent will accept. */
function trustAnchors(dir: string): Record<string, string> {
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => n.endsWith('.pub'));
  } catch (err) {
    throw new Error(`SNO_RELOCATE_TRUST_DIR: cannot read ${dir}: ${(err as Error).message}`);
  }
  if (names.length === 0) throw new Error(`SNO_RELOCATE_TRUST_DIR: no *.pub key in ${dir}`);
  return Object.fromEntries(
    names.map((n) => {
      const pem = readFileSync(path.join(dir, n), 'utf8');
      try {
        readPublicKey(pem, path.join(dir, n));
      } catch (err) {
        throw new Error(`SNO_RELOCATE_TRUST_DIR: ${(err as Error).message}`);
      }
      return [n, pem];
    }),
  );
}

export function optionsFromEnv(env: NodeJS.ProcessEnv): MachineConfigOptions {
  return {
    internalIP: internalIP(env.SNO_RELOCATE_INTERNAL_IP ?? DEFAULT_INTERNAL_IP),
    image: image(env.SNO_RELOCATE_IMAGE ?? DEFAULT_IMAGE),
    ...(env.SNO_RELOCATE_TRUST_DIR ? { trustAnchors: trustAnchors(env.SNO_RELOCATE_TRUST_DIR) } : {}),
  };
}

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
