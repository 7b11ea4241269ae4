/**
 * Sealing a site folder to its node's key, at the author's desk (`sign --node-key`, `render` with
 * a node-key column): every secret the folder carries is replaced by its age ciphertext for the
 * node's recipient, in place, before the folder is signed, so the stick holds only ciphertext and
 * the signature covers it. What counts as a secret:
 *
 * - a native site-config: the pull secret (inline or its file), the TLS private keys of
 *   spec.certificates, the site CA's key, and a proxy URL that carries credentials;
 * - an image-based install's manifest.json: the pull secret, the API server's signer keys, the
 *   ingress CA's key, and the proxies whose URLs carry credentials.
 *
 * A file is replaced by the armored ciphertext of its bytes; an inline value by a string holding
 * the armored ciphertext of its JSON text (src/config/sealed.ts reads both back).
 */
import type { KeyObject } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import yaml from 'js-yaml';
import { UsageError } from '../base/errors.js';
import { admitSite, offNode } from '../config/admit.js';
import { isSealed } from '../config/sealed.js';
import type { LoadedSite } from '../config/site.js';
import type { SiteConfigV1 } from '../config/v1/schema.js';
import { sealTo } from './sealed-format.js';
import { type NodeBinding, type SignatureDocument, signSiteConfig } from './signature.js';

/**
 * A proxy whose URLs carry a user:password@ part, read as the schema reads the URL (everything up
 * to the first "/" after the scheme is the authority): the whole proxy is sealed, so a site-config
 * read without the key is still a valid one.
 */
const hasCredentials = (proxy: unknown): boolean =>
  ['httpProxy', 'httpsProxy'].some((key) => {
    const url = object(proxy)?.[key];
    return typeof url === 'string' && /^[a-z]+:\/\/[^/]*@/i.test(url);
  });

type Holder = Record<string, unknown>;
const object = (value: unknown): Holder | undefined =>
  value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Holder) : undefined;

const given = (v: unknown): boolean => v !== undefined;
const text = (v: unknown): boolean => typeof v === 'string' && v !== '';

/** The inline secrets of a document: [the object holding it, its key, its path] for each. */
function inlineSecrets(doc: Holder, media: LoadedSite['media']): [Holder, string, string][] {
  const out: [Holder, string, string][] = [];
  const take = (holder: Holder | undefined, key: string, at: string, when: (v: unknown) => boolean = given) => {
    if (holder && when(holder[key]) && !isSealed(String(holder[key]))) out.push([holder, key, `${at}.${key}`]);
  };
  if (media === 'native') {
    const spec = object(doc.spec);
    take(spec, 'pullSecret', '$.spec');
    take(spec, 'proxy', '$.spec', hasCredentials);
    return out;
  }
  take(doc, 'pull_secret', '$');
  const crypto = object(doc.KubeconfigCryptoRetention);
  const serving = object(object(crypto?.KubeAPICrypto)?.ServingCrypto);
  const at = '$.KubeconfigCryptoRetention';
  for (const key of [
    'localhost_signer_private_key',
    'service_network_signer_private_key',
    'loadbalancer_external_signer_private_key',
  ])
    take(serving, key, `${at}.KubeAPICrypto.ServingCrypto`, text);
  take(object(crypto?.IngresssCrypto), 'ingress_ca', `${at}.IngresssCrypto`, text);
  take(doc, 'proxy', '$', hasCredentials);
  take(doc, 'status_proxy', '$', hasCredentials);
  return out;
}

/** The files of a native site-config that hold secrets, with the field naming each. */
function secretFiles(config: SiteConfigV1): [string, string][] {
  const { spec } = config;
  const files: [string, string | undefined][] = [
    ['$.spec.pullSecretFile', spec.pullSecretFile],
    ['$.spec.certificates.ingress.keyFile', spec.certificates?.ingress?.keyFile],
    ['$.spec.certificates.api.keyFile', spec.certificates?.api?.keyFile],
    ['$.spec.access.siteCA.keyFile', spec.access?.siteCA?.keyFile],
  ];
  return files.filter((f): f is [string, string] => f[1] !== undefined);
}

/**
 * The fields of a native site-config that carry a secret, sealed or not: the files that hold one
 * and the inline values (a proxy only when its URLs carry credentials).
 */
export function secretFields(config: SiteConfigV1): string[] {
  const spec = object(config.spec);
  return [
    ...secretFiles(config).map(([field]) => field),
    ...(spec?.pullSecret !== undefined ? ['$.spec.pullSecret'] : []),
    ...(hasCredentials(spec?.proxy) ? ['$.spec.proxy'] : []),
  ];
}

/**
 * Seals every secret of an admitted (plaintext) site folder to the recipient, in place; returns
 * the fields sealed. The folder must be admitted again afterwards: its digests changed.
 */
export async function sealFolder(loaded: LoadedSite, recipient: string): Promise<string[]> {
  const sealed: string[] = [];
  if (loaded.media === 'native')
    for (const [field, name] of secretFiles(loaded.document)) {
      const file = path.join(loaded.dir, name);
      const data = await readFile(file);
      if (isSealed(data)) continue;
      await writeFile(file, await sealTo(recipient, data), { mode: 0o600 });
      sealed.push(field);
    }
  const text = await readFile(loaded.file, 'utf8');
  const doc = object(loaded.media === 'native' ? yaml.load(text) : JSON.parse(text));
  const inline = doc ? inlineSecrets(doc, loaded.media) : [];
  for (const [holder, key, field] of inline) {
    holder[key] = await sealTo(recipient, JSON.stringify(holder[key]));
    sealed.push(field);
  }
  if (inline.length > 0)
    await writeFile(
      loaded.file,
      loaded.media === 'native' ? yaml.dump(doc, { lineWidth: -1, noRefs: true }) : `${JSON.stringify(doc, null, 2)}\n`,
    );
  return sealed;
}

export interface FolderSigning {
  now: Date;
  notAfter?: Date;
  node?: NodeBinding;
  generation?: number;
  /** the node's age recipient: the folder's secrets are sealed to it before signing */
  nodeKey?: string;
}

/**
 * An admitted (plaintext) folder sealed to its node's key when one is given, admitted again as
 * the node will read it, and signed over what it then holds: the ciphertext.
 */
export async function sealAndSign(
  key: KeyObject,
  admitted: LoadedSite,
  options: FolderSigning,
): Promise<{ doc: SignatureDocument; files: number; sealed: string[] }> {
  const { nodeKey, node } = options;
  const nodeName = node?.serial ?? node?.machineId;
  if (nodeKey !== undefined && nodeName === undefined)
    throw new UsageError(
      'sealing to a node key needs the node it is for: bind the signature to its serial or machine-id',
    );
  const sealed = nodeKey === undefined ? [] : await sealFolder(admitted, nodeKey);
  const loaded = sealed.length > 0 ? await admitSite(admitted.dir, offNode(options.now)) : admitted;
  const doc = signSiteConfig(key, {
    site: loaded.site.name,
    files: loaded.files,
    now: options.now,
    ...(options.notAfter && { notAfter: options.notAfter }),
    ...(node && { node }),
    ...(options.generation !== undefined && { generation: options.generation }),
    ...(nodeKey !== undefined && nodeName !== undefined && { sealedFor: { node: nodeName, recipient: nodeKey } }),
  });
  return { doc, files: loaded.files.length, sealed };
}
