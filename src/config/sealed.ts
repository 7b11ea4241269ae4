/**
 * Sealed secrets on a stick: a field or file encrypted to one node's key, in age's armored format
 * (X25519 recipients, https://age-encryption.org/v1), so that a lost stick leaks nothing and any
 * age implementation can open it with the node's identity. A sealed file holds the armored
 * ciphertext of the file's bytes; a sealed value in site-config.yaml or manifest.json is a string
 * holding the armored ciphertext of the value's JSON text (a pull secret mapping as much as a
 * proxy URL). Signatures cover the ciphertext, as read.
 *
 * On the node the loader opens each sealed value in memory through the node's unsealer; where
 * there is none (a workstation), every sealed field is left out of what is checked and listed as
 * "sealed for node SN1234", and a run refuses such a site-config.
 */
import path from 'node:path';
import { type Finding, formatPath } from '../base/findings.js';
import { readBounded } from './read-bounded.js';

export const ARMOR_BEGIN = '-----BEGIN AGE ENCRYPTED FILE-----';
/** where `sign` and `render` say which node a folder is sealed for (the signed part's sealedFor) */
const SIGNATURE_FILE = 'site-config.sig';
const MAX_SIGNATURE_BYTES = 64 * 1024;

/** Whether a file's bytes or a value's text is a sealed (armored age) ciphertext. */
export const isSealed = (data: Buffer | string): boolean =>
  (typeof data === 'string' ? data : data.subarray(0, ARMOR_BEGIN.length).toString('latin1')).startsWith(ARMOR_BEGIN);

/** The node's side: opens what was sealed to its key. */
export interface Unsealer {
  /** plaintext of one sealed value; throws a refusal saying why it cannot be opened */
  open(armored: string, field: string, sealedFor: string): Promise<Buffer>;
  /** drops the node's identity: called once admission is over */
  forget(): void;
}

/** The sealed fields of one site-config as it is read. */
export interface Sealing {
  /** the node the stick names as the one it is sealed for ("unknown" when it names none) */
  sealedFor(): Promise<string>;
  /** plaintext of a sealed value, or undefined (and a finding) where this machine has no node key */
  open(armored: string, field: string, findings: Finding[]): Promise<Buffer | undefined>;
  /** the fields left sealed, in the order met */
  left: string[];
  /** the fields opened with the node's key, in the order met */
  opened: string[];
}

/** Which node the folder's signature says it is sealed for; read only to say so, never trusted. */
async function readSealedFor(dir: string): Promise<string> {
  try {
    const raw = await readBounded(path.join(dir, SIGNATURE_FILE), SIGNATURE_FILE, {
      inside: dir,
      limit: MAX_SIGNATURE_BYTES,
    });
    const node = (JSON.parse(raw.toString('utf8')) as { signed?: { sealedFor?: { node?: unknown } } }).signed?.sealedFor
      ?.node;
    return typeof node === 'string' && /^[\w.:-]{1,128}$/.test(node) ? node : 'unknown';
  } catch {
    return 'unknown';
  }
}

export function sealing(realDir: string, unsealer: Unsealer | undefined): Sealing {
  let node: Promise<string> | undefined;
  const sealedFor = () => (node ??= readSealedFor(realDir));
  const left: string[] = [];
  const opened: string[] = [];
  return {
    sealedFor,
    left,
    opened,
    async open(armored, field, findings) {
      if (unsealer) {
        const plain = await unsealer.open(armored, field, await sealedFor());
        opened.push(field);
        return plain;
      }
      left.push(field);
      findings.push({ severity: 'warning', path: field, message: `sealed for node ${await sealedFor()}` });
      return undefined;
    },
  };
}

/**
 * Every sealed string of a parsed document (YAML or JSON) opened in place: replaced by the value
 * its plaintext holds, or left out where this machine has no node key. `at` names the document's
 * root in findings (`$`, or `cluster-configuration/manifest.json: $`).
 */
export async function openDocument(
  value: unknown,
  root: string,
  seal: Sealing,
  findings: Finding[],
  at: readonly PropertyKey[] = [],
): Promise<unknown> {
  if (typeof value === 'string' && isSealed(value)) {
    const field = `${root}${formatPath(at).slice(1)}`;
    const plain = await seal.open(value, field, findings);
    if (plain === undefined) return undefined;
    try {
      return JSON.parse(plain.toString('utf8')) as unknown;
    } catch {
      // never echo the parser's message: it quotes the plaintext
      findings.push({ severity: 'error', path: field, message: 'the sealed value does not hold JSON' });
      return undefined;
    }
  }
  if (Array.isArray(value)) {
    const out: unknown[] = [];
    for (const [i, v] of value.entries()) out.push(await openDocument(v, root, seal, findings, [...at, i]));
    return out;
  }
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      const opened = await openDocument(v, root, seal, findings, [...at, k]);
      if (opened !== undefined) out[k] = opened;
    }
    return out;
  }
  return value;
}
