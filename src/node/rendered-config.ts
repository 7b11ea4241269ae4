/**
 * The machine-config daemon's current rendered config, as it keeps it on the node
 * (/etc/machine-config-daemon/currentconfig: the rendered MachineConfig as JSON, its Ignition
 * config under spec.config). The daemon compares every file that config declares with the disk
 * (its drift monitor, its preflight check before an update, its start-up validation) and marks the
 * node Degraded on any difference (machine-config-operator pkg/daemon/on_disk_validation.go,
 * daemon.go runPreflightConfigDriftCheck). So the agent never writes a declared file with other
 * contents: such a change has to come through a MachineConfig.
 */
import { gunzipSync } from 'node:zlib';
import type { RootFs } from '../ports/fs.js';

export const CURRENT_CONFIG = '/etc/machine-config-daemon/currentconfig';

interface RenderedFile {
  path: string;
  mode?: number;
  contents?: { source?: string; compression?: string };
}
interface RenderedConfig {
  metadata?: { name?: string };
  spec?: { config?: { storage?: { files?: RenderedFile[] } } };
}

export interface DeclaredFiles {
  /** the rendered config's name, e.g. rendered-master-0a1b2c */
  name: string;
  /** declared path to its decoded contents; undefined for a source that is not a data: URL */
  files: Map<string, string | undefined>;
}

async function decode(file: RenderedFile): Promise<string | undefined> {
  const source = file.contents?.source;
  if (source === undefined) return '';
  if (!source.startsWith('data:')) return undefined;
  const bytes = Buffer.from(await (await fetch(source)).arrayBuffer());
  return (file.contents?.compression === 'gzip' ? gunzipSync(bytes) : bytes).toString('utf8');
}

/** The files the daemon's current config declares; undefined on a node without the daemon's record. */
export async function declaredFiles(fs: RootFs): Promise<DeclaredFiles | undefined> {
  const text = await fs.readText(CURRENT_CONFIG);
  if (text === undefined) return undefined;
  let config: RenderedConfig;
  try {
    config = JSON.parse(text) as RenderedConfig;
  } catch {
    throw new Error(`${CURRENT_CONFIG} is not valid JSON: the machine-config daemon's record is damaged`);
  }
  const files = new Map<string, string | undefined>();
  for (const f of config.spec?.config?.storage?.files ?? []) files.set(f.path, await decode(f));
  return { name: config.metadata?.name ?? '(unnamed)', files };
}

/**
 * Why writing `content` to `path` would be drift the daemon reports, or undefined when the current
 * config does not declare the file or declares exactly this content.
 */
export function driftFromRendered(
  declared: DeclaredFiles | undefined,
  path: string,
  content: string,
): string | undefined {
  if (!declared?.files.has(path)) return undefined;
  const want = declared.files.get(path);
  if (want === content) return undefined;
  return `${path} is a file of the machine-config daemon's current config ${declared.name} with other contents; writing it would be config drift (node Degraded, updates refused)`;
}
