/**
 * Loading: locate -> read -> parse -> rules -> the files it names -> Site. All of it finishes
 * before the first change on the host, at the time passed in. Each stage lives in its own file;
 * this one only puts them in order.
 */
import path from 'node:path';
import { deferTimeFindings, type Finding, hasErrors } from '../base/findings.js';
import { fail } from './fail.js';
import { readFields } from './fields.js';
import { locate } from './locate.js';
import { toSite, withImageBased } from './normalise.js';
import { parseConfig, readDocument, relabelFor } from './parse.js';
import { fileReader, sha256 } from './read.js';
import type { Unsealer } from './sealed.js';
import type { LoadedSite } from './site.js';
import { networkRules } from './v1/network-rules.js';
import { documentRules, runRules } from './v1/rules.js';

/**
 * Loads and fully validates a site-config (native, or an image-based install's config media);
 * throws ConfigError naming every problem. With `deferTime` (a clock chronyd has not synchronised
 * yet), a problem of time alone (a certificate outside its validity) is a warning, and kept in
 * `deferred` to be judged again on the synchronised clock (src/trust/clock.ts).
 */
export async function loadSiteConfig(
  target: string,
  now: Date,
  deferTime = false,
  unsealer?: Unsealer,
): Promise<LoadedSite> {
  const located = await locate(path.resolve(target));
  const findings: Finding[] = [];
  const deferred: Finding[] = [];
  const judged = (): boolean => {
    if (deferTime) deferTimeFindings(findings, deferred);
    return hasErrors(findings);
  };
  const files = await fileReader(located.dir, findings, unsealer);
  const { bytes, shown, document, imageBased } = await readDocument(now, located, files, findings);
  const relabel = relabelFor(located.media);
  const config = parseConfig(document, relabel, findings);
  findings.push(...runRules(documentRules, { config, nmstatePath: '$.spec.network.nmstate' }).map(relabel));
  if (judged()) fail(findings);

  const { nmstate, ...fields } = await readFields(now, config, files, findings, relabel);
  const nmstatePath =
    config.spec.network.nmstateFile !== undefined ? `${config.spec.network.nmstateFile}: $` : '$.spec.network.nmstate';
  findings.push(...runRules(networkRules, { config, nmstatePath, ...(nmstate && { nmstate }) }).map(relabel));
  if (judged() || !nmstate) fail(findings);

  return {
    ...located,
    document: config,
    site: withImageBased(toSite(config, nmstate, fields), imageBased),
    files: [{ name: shown, sha256: sha256(bytes) }, ...files.digests],
    findings,
    deferred,
    ...(files.seal.left.length > 0 && { sealed: { node: await files.seal.sealedFor(), fields: files.seal.left } }),
    ...(files.seal.opened.length > 0 && { opened: files.seal.opened }),
  };
}
