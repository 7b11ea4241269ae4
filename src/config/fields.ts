/**
 * The fields of a site-config that name files or carry values beyond the schema: the nmstate
 * document, the pull secret, certificates, the trust bundle and the extra manifests, each read
 * through the bounded reader and checked, problems collected as findings naming the field.
 */
import type { Finding } from '../base/findings.js';
import { type NmstateState, nmstateSchema } from '../base/nmstate.js';
import { readAccess, readCertificates, readTrustBundle } from './certificate-fields.js';
import { readExtraManifests } from './extra-manifests.js';
import { givenPairFindings, siteAnchors } from '../certs/given-pairs.js';
import type { SiteFields } from './normalise.js';
import type { FileReader } from './read.js';
import { parseLenient } from './v1/parse.js';
import { type DockerConfig, pullSecretSchema, type SiteConfigV1 } from './v1/schema.js';
import { parseYamlDocument } from './yaml.js';

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

/**
 * The site's own serving certificates against the site's CAs, once both are read: the hosts they
 * must name are known here when the site-config gives the cluster's name.
 */
function givenPairsChecked(
  now: Date,
  config: SiteConfigV1,
  certificates: SiteFields['certificates'],
  access: SiteFields['access'],
  trustBundle: SiteFields['trustBundle'],
): Finding[] {
  const anchors = siteAnchors(
    access?.siteCa?.certPem,
    trustBundle?.caBundlePem,
    'spec.access.siteCA or spec.trustBundle',
  );
  const cluster = config.spec.clusterName && `${config.spec.clusterName}.${config.spec.baseDomain}`;
  const names = { api: cluster && [`api.${cluster}`], ingress: cluster && [`*.apps.${cluster}`] };
  return (['ingress', 'api'] as const).flatMap((which) => {
    const pair = certificates[which];
    if (!pair) return [];
    const given = { certPem: pair.certPem, names: names[which] || undefined };
    return givenPairFindings(given, anchors, now, `$.spec.certificates.${which}.certFile`);
  });
}

/** Every field read and checked, in order; `relabel` names a translated field where it came from. */
export async function readFields(
  now: Date,
  config: SiteConfigV1,
  files: FileReader,
  findings: Finding[],
  relabel: (f: Finding) => Finding,
): Promise<SiteFields & { nmstate: NmstateState | undefined }> {
  const nmstate = await readNmstate(config, files, findings);
  const pullSecret = await readPullSecret(config, files, findings);
  const certificates = await readCertificates(now, config, files, findings);
  const access = await readAccess(now, config, files, findings);
  // an inline bundle may come from manifest.json's additionalTrustBundle: its findings name that field
  const bundleFindings: Finding[] = [];
  const trustBundle = await readTrustBundle(now, config, files, bundleFindings);
  findings.push(...bundleFindings.map(relabel));
  findings.push(...givenPairsChecked(now, config, certificates, access, trustBundle));
  const extraManifests = await readExtraManifests(files, findings);
  return {
    nmstate,
    ...(pullSecret && { pullSecret }),
    certificates,
    ...(access && { access }),
    ...(trustBundle && { trustBundle }),
    extraManifests,
  };
}
