/**
 * Signed site-configs. A signature (FOLDER/site-config.sig) covers a manifest of the site-config
 * and every file it names (sha256 each), an optional expiry and an optional binding to one node
 * (its /etc/machine-id or DMI serial). Ed25519 through node:crypto; the signed bytes are a fixed
 * prefix and the canonical JSON (keys sorted) of the signed part, so signer and verifier agree
 * whatever order a JSON writer puts keys in.
 */
import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type KeyObject,
  sign,
  verify,
} from 'node:crypto';
import * as z from 'zod';
import type { SiteFile } from '../config/site.js';

export const SIGNATURE_FILE = 'site-config.sig';
const SIGNED_PREFIX = 'sno-relocate site-config signature v1\n';
export const MAX_SIGNATURE_BYTES = 64 * 1024;

export const nodeBindingSchema = z.strictObject({
  machineId: z.string().min(1).optional(),
  serial: z.string().min(1).optional(),
});

export const signedSchema = z.strictObject({
  site: z.string(),
  keyId: z.string().regex(/^sha256:[0-9a-f]{64}$/),
  signedAt: z.iso.datetime(),
  notAfter: z.iso.datetime().optional(),
  node: nodeBindingSchema.optional(),
  /** the node's generation of this folder: a node refuses one older than the last it applied */
  generation: z.number().int().positive().optional(),
  /** the node whose key the folder's secrets are sealed to (its serial or machine-id) and that key */
  sealedFor: z.strictObject({ node: z.string().regex(/^[\w.:-]{1,128}$/), recipient: z.string() }).optional(),
  files: z.array(z.strictObject({ name: z.string().min(1), sha256: z.string().regex(/^[0-9a-f]{64}$/) })).min(1),
});

export const signatureDocumentSchema = z.strictObject({
  apiVersion: z.literal('sno-relocate/v1'),
  kind: z.literal('SiteConfigSignature'),
  signed: signedSchema,
  signature: z.string().regex(/^[A-Za-z0-9+/]+=*$/),
});

export type Signed = z.infer<typeof signedSchema>;
export type SignatureDocument = z.infer<typeof signatureDocumentSchema>;
export type NodeBinding = z.infer<typeof nodeBindingSchema>;

/** JSON with object keys sorted at every depth: one byte sequence per value. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined);
    entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

const signedBytes = (signed: Signed) => Buffer.from(SIGNED_PREFIX + canonicalJson(signed), 'utf8');

/** The key id: sha256 of the public key's SPKI DER encoding. */
export function keyId(key: KeyObject): string {
  const publicKey = key.type === 'private' ? createPublicKey(key) : key;
  return `sha256:${createHash('sha256')
    .update(publicKey.export({ type: 'spki', format: 'der' }))
    .digest('hex')}`;
}

export interface KeyPairPem {
  privatePem: string;
  publicPem: string;
  keyId: string;
}

export function generateSigningKey(): KeyPairPem {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return {
    privatePem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    publicPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    keyId: keyId(publicKey),
  };
}

export class KeyError extends Error {}

function ed25519(key: KeyObject, what: string): KeyObject {
  if (key.asymmetricKeyType !== 'ed25519')
    throw new KeyError(
      `${what} is a ${key.asymmetricKeyType ?? 'symmetric'} key; sno-relocate signs with Ed25519 keys (sno-relocate keygen)`,
    );
  return key;
}

export function readPrivateKey(pem: string, what: string): KeyObject {
  try {
    return ed25519(createPrivateKey(pem), what);
  } catch (err) {
    if (err instanceof KeyError) throw err;
    throw new KeyError(`${what} is not a PEM private key`);
  }
}

export function readPublicKey(pem: string, what: string): KeyObject {
  try {
    return ed25519(createPublicKey(pem), what);
  } catch (err) {
    if (err instanceof KeyError) throw err;
    throw new KeyError(`${what} is not a PEM public key`);
  }
}

export interface SignInput {
  site: string;
  files: readonly SiteFile[];
  now: Date;
  notAfter?: Date;
  node?: NodeBinding;
  generation?: number;
  sealedFor?: { node: string; recipient: string };
}

export function signSiteConfig(key: KeyObject, input: SignInput): SignatureDocument {
  const signed: Signed = {
    site: input.site,
    keyId: keyId(key),
    signedAt: input.now.toISOString(),
    ...(input.notAfter ? { notAfter: input.notAfter.toISOString() } : {}),
    ...(input.node ? { node: input.node } : {}),
    ...(input.generation !== undefined ? { generation: input.generation } : {}),
    ...(input.sealedFor ? { sealedFor: input.sealedFor } : {}),
    files: [...input.files].map((f) => ({ name: f.name, sha256: f.sha256 })).sort((a, b) => (a.name < b.name ? -1 : 1)),
  };
  return {
    apiVersion: 'sno-relocate/v1',
    kind: 'SiteConfigSignature',
    signed,
    signature: sign(null, signedBytes(signed), key).toString('base64'),
  };
}

export interface TrustAnchor {
  /** file name under the trust folder, for messages */
  name: string;
  key: KeyObject;
}

export interface NodeIdentity {
  machineId?: string;
  serial?: string;
}

export interface VerifyInput {
  /** the raw site-config.sig, or undefined when the folder has none */
  document: Buffer | undefined;
  anchors: readonly TrustAnchor[];
  /** key ids the trust folder's revocation list names: a signature by one of them is refused */
  revoked?: ReadonlySet<string>;
  files: readonly SiteFile[];
  /** the time the signature's notAfter is judged at; undefined: the caller judges it later (a deferred clock) */
  now: Date | undefined;
  node: NodeIdentity;
}

export type Verdict = { trusted: true; anchor: string; signed: Signed } | { trusted: false; reason: string };

function parseDocument(raw: Buffer): SignatureDocument | string {
  if (raw.length > MAX_SIGNATURE_BYTES) return `${SIGNATURE_FILE} is ${raw.length} bytes; a signature is a few hundred`;
  let value: unknown;
  try {
    value = JSON.parse(raw.toString('utf8'));
  } catch {
    return `${SIGNATURE_FILE} is not JSON`;
  }
  const parsed = signatureDocumentSchema.safeParse(value);
  return parsed.success
    ? parsed.data
    : `${SIGNATURE_FILE} is not a sno-relocate signature (${parsed.error.issues[0]?.path.join('.') || 'document'}: ${parsed.error.issues[0]?.message})`;
}

/** Decides whether a site-config folder may be used on this node; the reason says why not in plain words. */
export function verifySiteConfig(input: VerifyInput): Verdict {
  if (input.document === undefined)
    return { trusted: false, reason: `site-config not signed by a trusted key: the folder has no ${SIGNATURE_FILE}` };
  const doc = parseDocument(input.document);
  if (typeof doc === 'string') return { trusted: false, reason: `site-config not signed by a trusted key: ${doc}` };
  const anchor = input.anchors.find((a) => keyId(a.key) === doc.signed.keyId);
  if (!anchor)
    return {
      trusted: false,
      reason: `site-config not signed by a trusted key: it was signed by key ${doc.signed.keyId}, which this node does not trust`,
    };
  if (input.revoked?.has(doc.signed.keyId))
    return {
      trusted: false,
      reason: `site-config not signed by a trusted key: it was signed by key ${doc.signed.keyId} (${anchor.name}), which is revoked`,
    };
  if (!verify(null, signedBytes(doc.signed), anchor.key, Buffer.from(doc.signature, 'base64'))) {
    return {
      trusted: false,
      reason: `site-config not signed by a trusted key: the signature does not match what it claims to cover (altered after signing)`,
    };
  }
  const signedFiles = new Map(doc.signed.files.map((f) => [f.name, f.sha256]));
  for (const file of input.files) {
    const digest = signedFiles.get(file.name);
    if (digest === undefined) return { trusted: false, reason: `file ${file.name} is not covered by the signature` };
    if (digest !== file.sha256) return { trusted: false, reason: `file ${file.name} changed after signing` };
  }
  // a file taken away (an extra manifest) changes what is applied as much as one altered
  const present = new Set(input.files.map((f) => f.name));
  const missing = doc.signed.files.find((f) => !present.has(f.name));
  if (missing) return { trusted: false, reason: `file ${missing.name} is covered by the signature but missing` };
  if (doc.signed.notAfter && input.now && input.now.getTime() > Date.parse(doc.signed.notAfter))
    return { trusted: false, reason: `signature expired on ${doc.signed.notAfter}` };
  const bound = doc.signed.node;
  if (bound?.machineId !== undefined && bound.machineId !== input.node.machineId)
    return {
      trusted: false,
      reason: `made for another node (machine-id ${bound.machineId}, this node is ${input.node.machineId ?? 'unknown'})`,
    };
  if (bound?.serial !== undefined && bound.serial !== input.node.serial)
    return {
      trusted: false,
      reason: `made for another node (serial ${bound.serial}, this node is ${input.node.serial ?? 'unknown'})`,
    };
  return { trusted: true, anchor: anchor.name, signed: doc.signed };
}
