/**
 * Extra manifests: Kubernetes objects the site adds to its cluster (day-2 operators configured at
 * the site: an SR-IOV network node policy, a performance profile, their namespaces and CRDs). They
 * sit in a folder `extra-manifests/` beside the native site-config, or at the root of the image-based
 * install's config media, where `openshift-install image-based create config-image` puts them.
 * Files ending .yaml, .yml or .json are read in name order, every document of a multi-document file
 * in turn; each is checked here, before the first change, to name its object (apiVersion, kind,
 * metadata.name). Every file read is one the site-config's signature must cover.
 */
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import type { Finding } from '../base/findings.js';
import { CRD_API_VERSION, CRD_KIND } from '../kube/crd.js';
import type { KubeObject } from '../ports/kube.js';
import { DocumentError, decodeText, parseYamlDocuments } from './yaml.js';
import { byCodeUnit } from '../base/order.js';

export const EXTRA_MANIFESTS_DIR = 'extra-manifests';
const MANIFEST_FILE_NAME = /\.(ya?ml|json)$/;

export interface ExtraManifest {
  /** the file, relative to the site-config folder: extra-manifests/10-sriov.yaml */
  file: string;
  /** the document's position in its file, from 0 */
  index: number;
  object: KubeObject;
}

/** `extra-manifests/10-sriov.yaml[1]`: how every message names a manifest. */
export const manifestAt = (m: Pick<ExtraManifest, 'file' | 'index'>): string => `${m.file}[${m.index}]`;

const groupOf = (apiVersion: string): string => (apiVersion.includes('/') ? apiVersion.split('/')[0]! : '');

/** The group and kind a CustomResourceDefinition manifest serves, or undefined for any other object. */
export function crdServes(object: KubeObject): { group: string; kind: string } | undefined {
  if (groupOf(object.apiVersion) !== groupOf(CRD_API_VERSION) || object.kind !== CRD_KIND) return undefined;
  const spec = object.spec as { group?: unknown; names?: { kind?: unknown } } | undefined;
  return typeof spec?.group === 'string' && typeof spec.names?.kind === 'string'
    ? { group: spec.group, kind: spec.names.kind }
    : undefined;
}

/** The manifest among `manifests` whose CRD serves this object's kind. */
export const crdFor = (object: KubeObject, manifests: readonly ExtraManifest[]): ExtraManifest | undefined =>
  manifests.find((m) => {
    const served = crdServes(m.object);
    return served?.group === groupOf(object.apiVersion) && served.kind === object.kind;
  });

/**
 * The document a YAML syntax error is in: the `---` separators above its line, less one when the
 * file itself starts with one.
 */
function documentAt(text: string, line: number): number {
  const lines = text.split('\n');
  const separators = lines.slice(0, line - 1).filter((l) => /^---(\s|$)/.test(l)).length;
  const first = lines.find((l) => l.trim() !== '' && !l.startsWith('#'));
  return Math.max(0, separators - (first !== undefined && /^---(\s|$)/.test(first) ? 1 : 0));
}

const nonEmpty = (v: unknown): v is string => typeof v === 'string' && v !== '';

/** Why a parsed document cannot be applied, as findings at its file and index. */
function documentProblems(doc: unknown, at: string): Finding[] {
  const error = (field: string, message: string): Finding => ({ severity: 'error', path: `${at}: ${field}`, message });
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc))
    return [error('$', 'not a mapping: a manifest is one Kubernetes object')];
  const obj = doc as { apiVersion?: unknown; kind?: unknown; metadata?: unknown };
  const out: Finding[] = [];
  if (!nonEmpty(obj.apiVersion)) out.push(error('$.apiVersion', 'required: a string such as v1 or example.com/v1'));
  if (!nonEmpty(obj.kind)) out.push(error('$.kind', 'required: the kind of the object'));
  const metadata = obj.metadata as { name?: unknown; namespace?: unknown } | undefined;
  if (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata))
    out.push(error('$.metadata', 'required: a mapping with the object name'));
  else {
    if (!nonEmpty(metadata.name))
      out.push(
        error('$.metadata.name', 'required: each manifest names its object (generateName cannot be re-applied)'),
      );
    if (metadata.namespace !== undefined && !nonEmpty(metadata.namespace))
      out.push(error('$.metadata.namespace', 'a non-empty string when given'));
  }
  return out;
}

const identity = (o: KubeObject): string =>
  `${groupOf(o.apiVersion)}/${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;

/** Checks across manifests: one object named twice, a custom resource before the CRD that serves it. */
function setProblems(manifests: readonly ExtraManifest[]): Finding[] {
  const out: Finding[] = [];
  const seen = new Map<string, ExtraManifest>();
  manifests.forEach((m, i) => {
    const first = seen.get(identity(m.object));
    if (first)
      out.push({
        severity: 'error',
        path: manifestAt(m),
        message: `names the same object as ${manifestAt(first)} (${m.object.kind} ${m.object.metadata.name}); keep one`,
      });
    else seen.set(identity(m.object), m);
    const crd = crdFor(m.object, manifests.slice(i + 1));
    if (crd)
      out.push({
        severity: 'error',
        path: manifestAt(m),
        message: `its kind ${m.object.kind} is installed by ${manifestAt(crd)}, which comes after it in name order; rename the files so the CustomResourceDefinition comes first`,
      });
  });
  return out;
}

export interface ManifestReader {
  /** resolved site-config folder */
  realDir: string;
  /** reads a file of the folder, recording its digest (what a signature covers); errors become findings */
  read(fieldPath: string, name: string): Promise<Buffer>;
}

/** The folder's manifest files in name order; other entries are named in warnings. */
async function manifestFiles(realDir: string, findings: Finding[]): Promise<string[]> {
  let entries;
  try {
    entries = await readdir(path.join(realDir, EXTRA_MANIFESTS_DIR), { withFileTypes: true });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return [];
    findings.push({
      severity: 'error',
      path: EXTRA_MANIFESTS_DIR,
      message: code === 'ENOTDIR' ? 'not a folder' : `cannot be read (${code ?? 'error'})`,
    });
    return [];
  }
  const names: string[] = [];
  for (const entry of entries) {
    const name = `${EXTRA_MANIFESTS_DIR}/${entry.name}`;
    if (MANIFEST_FILE_NAME.test(entry.name) && !entry.isDirectory()) names.push(name);
    else
      findings.push({
        severity: 'warning',
        path: name,
        message: 'ignored: only .yaml, .yml and .json files are applied',
      });
  }
  return names.sort(byCodeUnit);
}

/** Reads and checks every extra manifest of a site-config folder; problems are findings naming file and index. */
export async function readExtraManifests(files: ManifestReader, findings: Finding[]): Promise<ExtraManifest[]> {
  const manifests: ExtraManifest[] = [];
  for (const file of await manifestFiles(files.realDir, findings)) {
    const bytes = await files.read(file, file);
    if (bytes.length === 0) continue;
    let docs: unknown[];
    try {
      docs = parseYamlDocuments(bytes, file);
    } catch (err) {
      if (!(err instanceof DocumentError)) throw err;
      const index = err.line === undefined ? undefined : documentAt(decodeText(bytes, file), err.line);
      findings.push({
        severity: 'error',
        path: index === undefined ? file : manifestAt({ file, index }),
        message: err.message.replace(`${file}: `, ''),
      });
      continue;
    }
    docs.forEach((doc, index) => {
      // an empty document (a trailing ---) holds no object
      if (doc === null) return;
      const problems = documentProblems(doc, manifestAt({ file, index }));
      findings.push(...problems);
      if (problems.length === 0) manifests.push({ file, index, object: doc as KubeObject });
    });
  }
  findings.push(...setProblems(manifests));
  return manifests;
}
