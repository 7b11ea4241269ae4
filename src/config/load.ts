/**
 * Loading: site-config file or folder -> safe YAML -> schema -> rules -> the
 * files it names. All of it finishes before the first change on the host.
 */
import { createHash, createPrivateKey, X509Certificate } from 'node:crypto';
import { realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { ConfigError } from '../base/errors.js';
import { type Finding, formatFinding, hasErrors } from '../base/findings.js';
import type { CertificatePair, InService, LoadedSite, Site, SiteAccess, SiteFile, TrustBundle } from './site.js';
import { certificatesIn, pemBlockTypes } from '../base/pem.js';
import { accessCaFindings } from '../certs/ca-checks.js';
import { DEFAULT_IN_SERVICE_TIMEOUT_SECONDS, DEFAULT_VERIFY_TIMEOUT_SECONDS } from '../base/timeouts.js';
import { parseLenient, parseSiteConfig } from './v1/parse.js';
import { documentRules, networkRules, runRules } from './v1/rules.js';
import { type DockerConfig, pullSecretSchema, type SiteConfigV1 } from './v1/schema.js';
import { type NmstateState, nmstateSchema } from '../base/nmstate.js';
import { readBounded } from './read-bounded.js';
import { readExtraManifests } from './extra-manifests.js';
import { DocumentError, decodeText, parseYamlDocument } from './yaml.js';
import { type ImageBasedSite, withImageBased } from './ibi/image-based.js';
import {
  ADMIN_CA_FIELD,
  MANIFEST_FILE,
  MIRROR_FILES,
  mirrorsFromFile,
  seedReconfigurationSchema,
  sourceOf,
  translateSeedReconfiguration,
} from './ibi/seed-reconfiguration.js';

export const SITE_CONFIG_NAMES = ['site-config.yaml', 'site-config.yml', 'site-config.json'];

function fail(findings: Finding[], summary?: string): never {
  const errors = findings.filter((f) => f.severity === 'error');
  throw new ConfigError(summary ?? `invalid site-config:\n  ${errors.map(formatFinding).join('\n  ')}`, findings);
}

/** What a path names: a native site-config file, or the root of an image-based install's config media. */
interface Located {
  file: string;
  /** the folder every other file is read from (and what a signature covers) */
  dir: string;
  media: 'native' | 'ibi';
}

const isFile = (candidate: string): Promise<boolean> =>
  stat(candidate).then(
    (s) => s.isFile(),
    () => false,
  );

/** The file a folder holds, native site-config first; undefined when it holds neither kind. */
export async function configFileIn(dir: string): Promise<Omit<Located, 'dir'> | undefined> {
  for (const name of SITE_CONFIG_NAMES) {
    const candidate = path.join(dir, name);
    if (await isFile(candidate)) return { file: candidate, media: 'native' };
  }
  const manifest = path.join(dir, MANIFEST_FILE);
  if (await isFile(manifest)) return { file: manifest, media: 'ibi' };
  return undefined;
}

async function locate(target: string): Promise<Located> {
  let info;
  try {
    info = await stat(target);
  } catch {
    fail([{ severity: 'error', path: target, message: 'no such file or folder' }]);
  }
  if (!info.isDirectory()) {
    // manifest.json named directly: the media root is two levels up
    if (target.endsWith(path.join(...MANIFEST_FILE.split('/'))))
      return { file: target, dir: path.dirname(path.dirname(target)), media: 'ibi' };
    return { file: target, dir: path.dirname(target), media: 'native' };
  }
  const found = await configFileIn(target);
  if (found) return { ...found, dir: target };
  return fail([
    { severity: 'error', path: target, message: `folder holds no ${SITE_CONFIG_NAMES[0]} and no ${MANIFEST_FILE}` },
  ]);
}

const sha256 = (data: Buffer): string => createHash('sha256').update(data).digest('hex');

interface FileReader {
  read(fieldPath: string, name: string): Promise<Buffer>;
  digests: SiteFile[];
  dir: string;
  realDir: string;
}

async function fileReader(dir: string, findings: Finding[]): Promise<FileReader> {
  const realDir = await realpath(dir).catch(() => dir);
  const digests: SiteFile[] = [];
  return {
    digests,
    dir,
    realDir,
    async read(fieldPath, name) {
      try {
        const data = await readBounded(path.join(realDir, name), name, { inside: realDir });
        digests.push({ name, sha256: sha256(data) });
        return data;
      } catch (err) {
        findings.push({
          severity: 'error',
          path: fieldPath,
          message: err instanceof Error ? err.message : String(err),
        });
        return Buffer.alloc(0);
      }
    },
  };
}

async function readNmstate(
  config: SiteConfigV1,
  files: FileReader,
  findings: Finding[],
): Promise<NmstateState | undefined> {
  const { nmstate, nmstateFile } = config.spec.network;
  if (nmstate !== undefined || nmstateFile === undefined) return nmstate;
  const data = await files.read('$.spec.network.nmstateFile', nmstateFile);
  if (data.length === 0) return undefined;
  try {
    const parsed = parseLenient(nmstateSchema, parseYamlDocument(data, nmstateFile));
    findings.push(...parsed.findings.map((f) => ({ ...f, path: `${nmstateFile}: ${f.path}` })));
    return parsed.value;
  } catch (err) {
    findings.push({ severity: 'error', path: '$.spec.network.nmstateFile', message: (err as Error).message });
    return undefined;
  }
}

async function readPullSecret(
  config: SiteConfigV1,
  files: FileReader,
  findings: Finding[],
): Promise<DockerConfig | undefined> {
  const { pullSecret, pullSecretFile } = config.spec;
  if (pullSecretFile === undefined) return pullSecret;
  const data = await files.read('$.spec.pullSecretFile', pullSecretFile);
  if (data.length === 0) return undefined;
  let doc: unknown;
  try {
    doc = JSON.parse(data.toString('utf8'));
  } catch {
    // never echo the parser's message: it quotes the secret's text
    findings.push({ severity: 'error', path: '$.spec.pullSecretFile', message: `${pullSecretFile} is not valid JSON` });
    return undefined;
  }
  const parsed = parseLenient(pullSecretSchema, doc, []);
  // the schema's messages name paths and types only, never values
  findings.push(...parsed.findings.map((f) => ({ ...f, path: `${pullSecretFile}: ${f.path}` })));
  return parsed.value;
}

async function readCertificates(
  now: Date,
  config: SiteConfigV1,
  files: FileReader,
  findings: Finding[],
): Promise<Site['certificates']> {
  const out: Site['certificates'] = {};
  for (const which of ['ingress', 'api'] as const) {
    const pair = config.spec.certificates?.[which];
    if (!pair) continue;
    const certPath = `$.spec.certificates.${which}.certFile`;
    const keyPath = `$.spec.certificates.${which}.keyFile`;
    const certPem = (await files.read(certPath, pair.certFile)).toString('utf8');
    const keyPem = (await files.read(keyPath, pair.keyFile)).toString('utf8');
    if (!certPem || !keyPem) continue;
    const checked = checkPair(now, { certPem, keyPem }, certPath, keyPath, findings);
    if (checked) out[which] = checked;
  }
  return out;
}

function checkPair(
  now: Date,
  pair: CertificatePair,
  certPath: string,
  keyPath: string,
  findings: Finding[],
): CertificatePair | undefined {
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(pair.certPem);
  } catch {
    findings.push({ severity: 'error', path: certPath, message: 'not a PEM certificate' });
    return undefined;
  }
  try {
    if (!cert.checkPrivateKey(createPrivateKey(pair.keyPem))) {
      findings.push({ severity: 'error', path: keyPath, message: 'private key does not match the certificate' });
      return undefined;
    }
  } catch {
    findings.push({ severity: 'error', path: keyPath, message: 'not a PEM private key' });
    return undefined;
  }
  if (Date.parse(cert.validTo) < now.getTime())
    findings.push({ severity: 'error', path: certPath, message: `certificate expired on ${cert.validTo}` });
  return pair;
}

async function readAccess(
  now: Date,
  config: SiteConfigV1,
  files: FileReader,
  findings: Finding[],
): Promise<SiteAccess | undefined> {
  const access = config.spec.access;
  if (!access) return undefined;
  const out: SiteAccess = {};
  if (access.kubeadminPasswordHash !== undefined) out.kubeadminPasswordHash = access.kubeadminPasswordHash;
  if (access.clientCAFile !== undefined) {
    const at = '$.spec.access.clientCAFile';
    const pem = (await files.read(at, access.clientCAFile)).toString('utf8');
    const problem = pem ? caBundleProblem(now, pem) : undefined;
    if (problem) findings.push({ severity: 'error', path: at, message: problem });
    else if (pem) out.clientCaPem = pem;
  }
  if (access.siteCA !== undefined) {
    const certPath = '$.spec.access.siteCA.certFile';
    const keyPath = '$.spec.access.siteCA.keyFile';
    const certPem = (await files.read(certPath, access.siteCA.certFile)).toString('utf8');
    const keyPem = (await files.read(keyPath, access.siteCA.keyFile)).toString('utf8');
    const checked = certPem && keyPem ? checkPair(now, { certPem, keyPem }, certPath, keyPath, findings) : undefined;
    const problem = checked ? caBundleProblem(now, checked.certPem) : undefined;
    if (problem) findings.push({ severity: 'error', path: certPath, message: problem });
    else if (checked) out.siteCa = checked;
  }
  findings.push(...accessCaFindings(out, now));
  return out;
}

/** Why PEM text is not a bundle of CA certificates valid now, or undefined when it is. */
function caBundleProblem(now: Date, pem: string): string | undefined {
  let certs: X509Certificate[];
  try {
    certs = certificatesIn(pem);
  } catch {
    return 'not PEM certificates';
  }
  if (certs.length === 0) return 'no PEM certificate in it';
  for (const cert of certs) {
    if (!cert.ca) return `${cert.subject.replace(/\n/g, ', ')} is not a CA certificate`;
    if (Date.parse(cert.validTo) < now.getTime())
      return `${cert.subject.replace(/\n/g, ', ')} expired on ${cert.validTo}`;
  }
  return undefined;
}

/** Why PEM text is not a trust bundle (certificates only, at least one), or undefined when it is. */
export function trustBundleProblem(pem: string): string | undefined {
  let blocks: string[];
  try {
    blocks = pemBlockTypes(pem);
    certificatesIn(pem);
  } catch {
    return 'not PEM certificates';
  }
  // a key pasted into a trust bundle would be published to every namespace: refused, never quoted
  const other = blocks.find((type) => type !== 'CERTIFICATE');
  if (other !== undefined) return `holds a ${other} block: a trust bundle holds certificates only`;
  if (blocks.length === 0) return 'no PEM certificate in it';
  return undefined;
}

async function readTrustBundle(
  now: Date,
  config: SiteConfigV1,
  files: FileReader,
  findings: Finding[],
): Promise<TrustBundle | undefined> {
  const bundle = config.spec.trustBundle;
  if (!bundle) return undefined;
  const at = bundle.caBundleFile !== undefined ? '$.spec.trustBundle.caBundleFile' : '$.spec.trustBundle.caBundle';
  const pem =
    bundle.caBundleFile !== undefined
      ? (await files.read(at, bundle.caBundleFile)).toString('utf8')
      : (bundle.caBundle ?? '');
  const problem = trustBundleProblem(pem);
  if (problem) {
    findings.push({ severity: 'error', path: at, message: problem });
    return undefined;
  }
  for (const cert of certificatesIn(pem))
    if (Date.parse(cert.validTo) < now.getTime())
      findings.push({
        severity: 'warning',
        path: at,
        message: `${cert.subject.replace(/\n/g, ', ')} expired on ${cert.validTo}: it is trusted for nothing`,
      });
  return { caBundlePem: pem, proxyTrustedCA: bundle.proxyTrustedCA ?? config.spec.proxy !== undefined };
}

function toInService(config: SiteConfigV1): InService | undefined {
  const spec = config.spec.inService;
  if (!spec) return undefined;
  return {
    workloads: spec.workloads ?? [],
    ...(spec.probe && { probe: { url: spec.probe.url, insecure: spec.probe.insecure ?? false } }),
    timeoutSeconds: spec.timeoutSeconds ?? DEFAULT_IN_SERVICE_TIMEOUT_SECONDS,
  };
}

function toSite(
  config: SiteConfigV1,
  nmstate: NmstateState,
  rest: Pick<Site, 'pullSecret' | 'certificates' | 'access' | 'trustBundle' | 'extraManifests'>,
): Site {
  const { spec } = config;
  return {
    name: config.metadata.name,
    baseDomain: spec.baseDomain,
    ...(spec.clusterName !== undefined && { clusterName: spec.clusterName }),
    ...(spec.hostname !== undefined && { hostname: spec.hostname }),
    ...(spec.nodeName !== undefined && { nodeName: spec.nodeName }),
    network: {
      nmstate,
      ...(spec.network.internalIP !== undefined && { internalIP: spec.network.internalIP }),
      machineNetworks: spec.network.machineNetworks ?? [],
      verify: {
        pingGateway: spec.network.verify?.pingGateway ?? false,
        resolve: spec.network.verify?.resolve ?? [],
        timeoutSeconds: spec.network.verify?.timeoutSeconds ?? DEFAULT_VERIFY_TIMEOUT_SECONDS,
      },
    },
    ...(rest.pullSecret !== undefined && { pullSecret: rest.pullSecret }),
    pullSecretPolicy: spec.pullSecretPolicy ?? 'replace',
    imageDigestMirrors: spec.imageDigestMirrors ?? [],
    imageTagMirrors: spec.imageTagMirrors ?? [],
    certificates: rest.certificates,
    sshAuthorizedKeys: spec.sshAuthorizedKeys ?? [],
    ...(rest.access && { access: rest.access }),
    ...(spec.chronyConfig !== undefined && { chronyConfig: spec.chronyConfig }),
    ...(spec.proxy !== undefined && { proxy: spec.proxy }),
    ...(rest.trustBundle && { trustBundle: rest.trustBundle }),
    nodeLabels: spec.nodeLabels ?? {},
    ...(spec.inService && { inService: toInService(config) }),
    extraManifests: rest.extraManifests,
  };
}

/** manifest.json and the mirror sets beside it -> the native site-config document it becomes. */
async function translateMedia(
  now: Date,
  bytes: Buffer,
  files: FileReader,
  findings: Finding[],
): Promise<{ document: unknown; imageBased: ImageBasedSite }> {
  let json: unknown;
  try {
    json = JSON.parse(decodeText(bytes, MANIFEST_FILE));
  } catch (err) {
    // never echo the parser's message: it quotes the text, pull secret included
    const message = err instanceof DocumentError ? err.message.replace(`${MANIFEST_FILE} `, '') : 'not valid JSON';
    fail([{ severity: 'error', path: MANIFEST_FILE, message }]);
  }
  const parsed = parseLenient(seedReconfigurationSchema, json);
  findings.push(...parsed.findings.map((f) => ({ ...f, path: `${MANIFEST_FILE}: ${f.path}` })));
  if (!parsed.value) fail(findings);
  const translated = translateSeedReconfiguration(parsed.value);
  findings.push(...translated.findings);
  const { adminClientCaPem } = translated.imageBased;
  const caProblem = adminClientCaPem !== undefined ? caBundleProblem(now, adminClientCaPem) : undefined;
  if (caProblem)
    findings.push({ severity: 'error', path: `${MANIFEST_FILE}: $.${ADMIN_CA_FIELD}`, message: caProblem });
  const spec = (translated.document as { spec: Record<string, unknown> }).spec;
  for (const name of MIRROR_FILES) {
    if (!(await isFile(path.join(files.dir, name)))) continue;
    const data = await files.read(name, name);
    let doc: unknown;
    try {
      doc = JSON.parse(decodeText(data, name));
    } catch {
      findings.push({ severity: 'error', path: name, message: 'not valid JSON' });
      continue;
    }
    const { mirrors, finding } = mirrorsFromFile(name, doc);
    if (finding) findings.push(finding);
    if (mirrors) spec.imageDigestMirrors = [...((spec.imageDigestMirrors as unknown[] | undefined) ?? []), ...mirrors];
  }
  if (hasErrors(findings)) fail(findings);
  return translated;
}

/**
 * Loads and fully validates a site-config (native, or an image-based install's config media);
 * throws ConfigError naming every problem.
 */
export async function loadSiteConfig(target: string, now: Date): Promise<LoadedSite> {
  const { file, dir, media } = await locate(path.resolve(target));
  const shown = path.relative(dir, file).split(path.sep).join('/');
  const findings: Finding[] = [];
  const files = await fileReader(dir, findings);
  let document: unknown;
  let imageBased: ImageBasedSite | undefined;
  let bytes: Buffer;
  try {
    // the site-config itself is confined to its folder like every file it names
    bytes = await readBounded(file, shown, { inside: files.realDir });
    if (media === 'ibi') ({ document, imageBased } = await translateMedia(now, bytes, files, findings));
    else document = parseYamlDocument(bytes, shown);
  } catch (err) {
    if (err instanceof DocumentError)
      fail([{ severity: 'error', path: shown, message: err.message.replace(`${shown}: `, '') }], err.message);
    throw err;
  }
  // a translated document's findings name the manifest.json field they came from
  const relabel = media === 'ibi' ? (f: Finding): Finding => ({ ...f, path: sourceOf(f.path) }) : (f: Finding) => f;
  const parsed = parseSiteConfig(document);
  findings.push(...parsed.findings.map(relabel));
  const config = parsed.value;
  if (!config) fail(findings);
  findings.push(...runRules(documentRules, { config, nmstatePath: '$.spec.network.nmstate' }).map(relabel));
  if (hasErrors(findings)) fail(findings);

  const nmstate = await readNmstate(config, files, findings);
  const pullSecret = await readPullSecret(config, files, findings);
  const certificates = await readCertificates(now, config, files, findings);
  const access = await readAccess(now, config, files, findings);
  // an inline bundle may come from manifest.json's additionalTrustBundle: its findings name that field
  const bundleFindings: Finding[] = [];
  const trustBundle = await readTrustBundle(now, config, files, bundleFindings);
  findings.push(...bundleFindings.map(relabel));
  const extraManifests = await readExtraManifests(files, findings);
  const nmstatePath =
    config.spec.network.nmstateFile !== undefined ? `${config.spec.network.nmstateFile}: $` : '$.spec.network.nmstate';
  findings.push(...runRules(networkRules, { config, nmstatePath, ...(nmstate && { nmstate }) }).map(relabel));
  if (hasErrors(findings) || !nmstate) fail(findings);

  return {
    file,
    dir,
    media,
    document: config,
    site: withImageBased(
      toSite(config, nmstate, {
        ...(pullSecret && { pullSecret }),
        certificates,
        ...(access && { access }),
        ...(trustBundle && { trustBundle }),
        extraManifests,
      }),
      imageBased,
    ),
    files: [{ name: shown, sha256: sha256(bytes) }, ...files.digests],
    findings,
  };
}
