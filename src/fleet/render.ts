/**
 * Renders a fleet's site folders from an inventory and a template: each row is filled in,
 * validated by the same loader the node uses, signed when a key is given, and only then moved into
 * place under its site id, so a bad row leaves nothing behind. Optionally each folder is packed as
 * an ISO9660 image labelled cluster-config with xorriso.
 */
import type { KeyObject } from 'node:crypto';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import yaml from 'js-yaml';
import pLimit from 'p-limit';
import { admitSite, offNode } from '../config/admit.js';
import { CONFIG_LABELS } from '../config/discover.js';
import { ConfigError, errorMessage } from '../base/errors.js';
import { reportManifestWork, reportManifestWorkReplicaSet } from '../hub/manifestwork.js';
import type { Exec } from '../ports/exec.js';
import { type FolderSigning, sealAndSign } from '../trust/seal-folder.js';
import { SIGNATURE_FILE } from '../trust/signature.js';
import { AGE_RECIPIENT } from '../trust/node-key.js';
import { GENERATION_TEXT } from '../trust/generation.js';
import { type Inventory, type InventoryRow, rowProblems, SITE_COLUMN } from './inventory.js';
import { columnsOf, fill, type Template } from './template.js';

export interface RenderOptions {
  inventory: Inventory;
  template: Template;
  out: string;
  key?: KeyObject;
  notAfter?: Date;
  /** pack each site as <out>/<site>.iso; needs xorriso */
  iso?: { exec: Exec };
  now: Date;
  /** called after each row, for a progress line */
  progress?: (done: number, total: number) => void;
}

export interface SiteResult {
  site: string;
  where: string;
  ok: boolean;
  /** the site folder (and image) written */
  folder?: string;
  iso?: string;
  /** why the row failed, each naming its inventory cell when one is to blame */
  errors?: string[];
}

/** Rows rendered at once: enough to overlap file I/O, few enough to keep memory flat. */
const CONCURRENCY = 8;

/** A loader finding, named on the inventory cell its value came from when the template says which. */
function blame(row: InventoryRow, template: Template, finding: { path: string; message: string }): string {
  const columns = columnsOf(template, finding.path);
  if (columns.length === 0) return `${row.where}: ${finding.path}: ${finding.message}`;
  return `${columns.map((c) => row.at(c)).join(', ')}: ${finding.path}: ${finding.message}`;
}

function missingValues(row: InventoryRow, template: Template): string[] {
  return [...template.columns]
    .filter((c) => (row.values[c] ?? '') === '')
    .map((c) => `${row.at(c)}: empty, and the template uses it`);
}

/** the optional columns that tie a row's folder to its node: its serial, its node key, its generation */
export const SERIAL_COLUMN = 'serial';
export const NODE_KEY_COLUMN = 'node-key';
export const GENERATION_COLUMN = 'generation';

/** What a row's node columns add to its signature, or why they cannot be used. */
function nodeColumns(row: InventoryRow): Pick<FolderSigning, 'node' | 'nodeKey' | 'generation'> | string {
  const serial = row.values[SERIAL_COLUMN] || undefined;
  const nodeKey = row.values[NODE_KEY_COLUMN] || undefined;
  const generation = row.values[GENERATION_COLUMN] || undefined;
  if (nodeKey !== undefined && !AGE_RECIPIENT.test(nodeKey))
    return `${row.at(NODE_KEY_COLUMN)}: not an age recipient (age1..., printed by factory prepare)`;
  if (nodeKey !== undefined && serial === undefined)
    return `${row.at(NODE_KEY_COLUMN)}: a node key needs the node's serial in column "${SERIAL_COLUMN}"`;
  if (generation !== undefined && !GENERATION_TEXT.test(generation))
    return `${row.at(GENERATION_COLUMN)}: not a whole number from 1`;
  return {
    ...(serial !== undefined && { node: { serial } }),
    ...(nodeKey !== undefined && { nodeKey }),
    ...(generation !== undefined && { generation: Number(generation) }),
  };
}

async function renderRow(options: RenderOptions, row: InventoryRow): Promise<SiteResult> {
  const site = row.values[SITE_COLUMN]!;
  const missing = missingValues(row, options.template);
  if (missing.length > 0) return { site, where: row.where, ok: false, errors: missing };
  const folder = path.join(options.out, site);
  const partial = path.join(options.out, `.${site}.partial`);
  await rm(partial, { recursive: true, force: true });
  try {
    for (const file of options.template.files) {
      const target = path.join(partial, file.name);
      await mkdir(path.dirname(target), { recursive: true });
      await writeFile(
        target,
        fill(file, (c) => row.values[c]!),
        { mode: /secret|\.key$/.test(file.name) ? 0o600 : 0o644 },
      );
    }
    let loaded;
    try {
      // parse and rules, as the node will run them; not trust, since the folder is signed only
      // once admitted (below), and not the factory record, which lives on each node, not here
      loaded = await admitSite(partial, offNode(options.now));
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      const errors = err.findings.filter((f) => f.severity === 'error');
      return {
        site,
        where: row.where,
        ok: false,
        errors: errors.length > 0 ? errors.map((f) => blame(row, options.template, f)) : [err.message],
      };
    }
    if (loaded.site.name !== site)
      return {
        site,
        where: row.where,
        ok: false,
        errors: [`${row.at(SITE_COLUMN)}: the template's metadata.name renders to ${loaded.site.name}, not ${site}`],
      };
    const node = nodeColumns(row);
    if (typeof node === 'string') return { site, where: row.where, ok: false, errors: [node] };
    if (options.key) {
      const { doc } = await sealAndSign(options.key, loaded, {
        now: options.now,
        ...(options.notAfter && { notAfter: options.notAfter }),
        ...node,
      });
      await writeFile(path.join(partial, SIGNATURE_FILE), `${JSON.stringify(doc, null, 2)}\n`);
    } else if (node.nodeKey !== undefined)
      return {
        site,
        where: row.where,
        ok: false,
        errors: [
          `${row.at(NODE_KEY_COLUMN)}: sealing needs --key: the node reads its sealed secrets only from a signed folder`,
        ],
      };
    await rm(folder, { recursive: true, force: true });
    await rename(partial, folder);
  } finally {
    await rm(partial, { recursive: true, force: true });
  }
  const result: SiteResult = { site, where: row.where, ok: true, folder };
  if (options.iso) {
    const iso = `${folder}.iso`;
    // ISO9660 on the whole image, no partition table, Rock Ridge and Joliet names: what
    // openshift-install image-based create config-image writes, and what the node's discovery reads
    await options.iso.exec.run('xorriso', [
      '-as',
      'mkisofs',
      '-quiet',
      '-V',
      CONFIG_LABELS[0],
      '-R',
      '-J',
      '-o',
      iso,
      folder,
    ]);
    result.iso = iso;
  }
  return result;
}

export async function renderFleet(options: RenderOptions): Promise<SiteResult[]> {
  await mkdir(options.out, { recursive: true });
  const problems = rowProblems(options.inventory);
  const limit = pLimit(CONCURRENCY);
  let done = 0;
  const total = options.inventory.rows.length;
  return Promise.all(
    options.inventory.rows.map((row) =>
      limit(async (): Promise<SiteResult> => {
        const problem = problems.get(row);
        const result: SiteResult = problem
          ? { site: row.values[SITE_COLUMN] ?? '', where: row.where, ok: false, errors: [problem] }
          : await renderRow(options, row).catch((err: unknown) => ({
              site: row.values[SITE_COLUMN]!,
              where: row.where,
              ok: false,
              errors: [`${row.where}: ${errorMessage(err)}`],
            }));
        options.progress?.(++done, total);
        return result;
      }),
    ),
  );
}

export interface HubObjectsOptions {
  dir: string;
  /** the Placement a ManifestWorkReplicaSet names; without it, only the per-cluster ManifestWorks */
  placement?: { namespace: string; name: string };
}

/**
 * The hub objects that read the rendered sites' SiteRelocation back: a ManifestWork per rendered
 * site, in the namespace named after its site id (the ManagedCluster's name when clusters are named
 * after their sites), and a ManifestWorkReplicaSet for the Placement when one is given. Returns the
 * files written.
 */
export async function writeHubObjects(options: HubObjectsOptions, results: readonly SiteResult[]): Promise<string[]> {
  await mkdir(options.dir, { recursive: true });
  const objects = results
    .filter((r) => r.ok)
    .map((r) => ({ file: `${r.site}.manifestwork.yaml`, object: reportManifestWork(r.site) }));
  if (options.placement)
    objects.push({ file: 'manifestworkreplicaset.yaml', object: reportManifestWorkReplicaSet(options.placement) });
  for (const { file, object } of objects)
    await writeFile(path.join(options.dir, file), yaml.dump(object, { noRefs: true, lineWidth: 120 }));
  return objects.map((o) => path.join(options.dir, o.file));
}
