/**
 * Loading: site-config file or folder -> safe YAML -> schema -> rules -> the
 * files it names. All of it finishes before the first change on the host.
 */
import { createHash, createPrivateKey, X509Certificate } from 'node:crypto';
import { realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { ConfigError } from '../engine/errors.js';
import { type Finding, formatFinding, hasErrors } from './findings.js';
import type { CertificatePair, LoadedSite, Site, SiteFile } from './site.js';
import { parseLenient, parseSiteConfig } from './v1/parse.js';
import { documentRules, networkRules, runRules } from './v1/rules.js';
import {
  type DockerConfig,
  type NmstateState,
  nmstateSchema,
  pullSecretSchema,
  type SiteConfigV1,
} from './v1/schema.js';
import { readBounded } from './read-bounded.js';
import { DocumentError, parseYamlDocument } from './yaml.js';

export const SITE_CONFIG_NAMES = ['site-config.yaml', 'site-config.yml', 'site-config.json'];

const DEFAULT_VERIFY_TIMEOUT_SECONDS = 90;

function fail(findings: Finding[], summary?: string): never {
  const errors = findings.filter((f) => f.severity === 'error');
  throw new ConfigError(summary ?? `invalid site-config:\n  ${errors.map(formatFinding).join('\n  ')}`, findings);
}

async function locate(target: string): Promise<string> {
  let info;
  try {
    info = await stat(target);
  } catch {
    fail([{ severity: 'error', path: target, message: 'no such file or folder' }]);
  }
  if (!info.isDirectory()) return target;
  for (const name of SITE_CONFIG_NAMES) {
    const candidate = path.join(target, name);
    if (
      await stat(candidate).then(
        (s) => s.isFile(),
        () => false,
      )
    )
      return candidate;
  }
  return fail([{ severity: 'error', path: target, message: `folder holds no ${SITE_CONFIG_NAMES[0]}` }]);
}

const sha256 = (data: Buffer): string => createHash('sha256').update(data).digest('hex');

interface FileReader {
  read(fieldPath: string, name: string): Promise<Buffer>;
  digests: SiteFile[];
}

async function fileReader(dir: string, findings: Finding[]): Promise<FileReader> {
  const realDir = await realpath(dir);
  const digests: SiteFile[] = [];
  return {
    digests,
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
    const checked = checkPair({ certPem, keyPem }, certPath, keyPath, findings);
    if (checked) out[which] = checked;
  }
  return out;
}

function checkPair(
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
  if (Date.parse(cert.validTo) < Date.now())
    findings.push({ severity: 'error', path: certPath, message: `certificate expired on ${cert.validTo}` });
  return pair;
}

function toSite(config: SiteConfigV1, nmstate: NmstateState, rest: Pick<Site, 'pullSecret' | 'certificates'>): Site {
  const { spec } = config;
  return {
    name: config.metadata.name,
    baseDomain: spec.baseDomain,
    ...(spec.clusterName !== undefined && { clusterName: spec.clusterName }),
    ...(spec.hostname !== undefined && { hostname: spec.hostname }),
    network: {
      nmstate,
      ...(spec.network.internalIP !== undefined && { internalIP: spec.network.internalIP }),
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
  };
}

/** Loads and fully validates a site-config; throws ConfigError naming every problem. */
export async function loadSiteConfig(target: string): Promise<LoadedSite> {
  const file = await locate(path.resolve(target));
  const dir = path.dirname(file);
  const shown = path.basename(file);
  let document: unknown;
  let bytes: Buffer;
  try {
    // the site-config itself is confined to its folder like every file it names
    const realDir = await realpath(dir).catch(() => dir);
    bytes = await readBounded(file, shown, { inside: realDir });
    document = parseYamlDocument(bytes, shown);
  } catch (err) {
    if (err instanceof DocumentError)
      fail([{ severity: 'error', path: shown, message: err.message.replace(`${shown}: `, '') }], err.message);
    throw err;
  }
  const parsed = parseSiteConfig(document);
  const findings = [...parsed.findings];
  const config = parsed.value;
  if (!config) fail(findings);
  findings.push(...runRules(documentRules, { config, nmstatePath: '$.spec.network.nmstate' }));
  if (hasErrors(findings)) fail(findings);

  const files = await fileReader(dir, findings);
  const nmstate = await readNmstate(config, files, findings);
  const pullSecret = await readPullSecret(config, files, findings);
  const certificates = await readCertificates(config, files, findings);
  const nmstatePath =
    config.spec.network.nmstateFile !== undefined ? `${config.spec.network.nmstateFile}: $` : '$.spec.network.nmstate';
  findings.push(...runRules(networkRules, { config, nmstatePath, ...(nmstate && { nmstate }) }));
  if (hasErrors(findings) || !nmstate) fail(findings);

  return {
    file,
    dir,
    document: config,
    site: toSite(config, nmstate, { ...(pullSecret && { pullSecret }), certificates }),
    files: [{ name: shown, sha256: sha256(bytes) }, ...files.digests],
    findings,
  };
}
