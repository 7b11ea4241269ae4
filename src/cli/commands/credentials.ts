/**
 * `credentials --site DIR --key CLIENT-CA.key --out FILE`: the site's admin kubeconfig, made on the
 * factory workstation before shipment, so no secret ever travels back from the node. Its client
 * certificate (CN=<--user>, O=system:masters) is signed by the site's admin client CA
 * (spec.access.clientCAFile, whose key stays at the factory), which the access step installs as the
 * API server's client CA; it trusts the site CA (spec.access.siteCA) that signs the API's certificate.
 */
import type { X509Certificate } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import yaml from 'js-yaml';
import { certificatesIn } from '../../base/pem.js';
import { chainProblem, selfSigned, withIntermediates } from '../../certs/chain.js';
import { issue, keyToPem, newKey } from '../../certs/issue.js';
import { describeKey, matchesKey, parseKey, SUPPORTED_KEY_TYPES, supportedKey } from '../../certs/key-types.js';
import { systemClock } from '../../ports/clock.js';
import { admitSite, offNode } from '../../config/admit.js';
import { ConfigError, UsageError } from '../../base/errors.js';
import { type Invocation, oneOf } from '../args.js';
import type { OptionsOf } from './options.js';
import type { CommandResult } from './result.js';

const DAY_MS = 86_400_000;
/** as the installer's admin kubeconfig: the certificate outlives the node's time at the site */
const CLIENT_VALIDITY_DAYS = 3650;
const USER = /^[A-Za-z0-9][A-Za-z0-9:._@-]{0,62}$/;

/** The CAs above `ca` in the bundle, its issuer first, as far as the bundle goes. */
function chainAbove(ca: X509Certificate, bundle: readonly X509Certificate[]): X509Certificate[] {
  const chain: X509Certificate[] = [];
  for (let cert = ca; !selfSigned(cert);) {
    const issuer = bundle.find(
      (c) => !chain.includes(c) && c !== cert && cert.checkIssued(c) && cert.verify(c.publicKey),
    );
    if (!issuer) break;
    chain.push(issuer);
    cert = issuer;
  }
  return chain;
}

export async function credentialsCommand(inv: Invocation<OptionsOf<'credentials'>>): Promise<CommandResult> {
  const format = oneOf('-o', inv.flags.output, ['text', 'json'] as const, 'text');
  const { site: siteDir, key, out } = inv.flags;
  const user = inv.flags.user ?? 'site-admin';
  if (!siteDir || !key || !out)
    throw new UsageError('credentials needs --site DIR (the site folder), --key CLIENT-CA.key and --out FILE');
  if (inv.positionals.length) throw new UsageError('credentials takes no PATH (the site folder is --site DIR)');
  if (!USER.test(user)) throw new UsageError(`--user: "${user}" is not a usable user name`);
  const now = systemClock.now();
  // the site folder at the author's desk: parse and rules, as the node will run them
  const loaded = await admitSite(siteDir, offNode(now));
  const { site, document } = loaded;
  const missing = (path: string, why: string) =>
    new ConfigError(`${path}: ${why}`, [{ severity: 'error', path, message: why }]);
  if (!document.spec.clusterName)
    throw missing('$.spec.clusterName', 'needed to name the API server (api.<clusterName>.<baseDomain>)');
  const clientCa = site.access?.clientCaPem;
  if (!clientCa) throw missing('$.spec.access.clientCAFile', "needed: the kubeconfig's certificate is signed by it");
  const siteCa = site.access?.siteCa;
  if (!siteCa)
    throw missing(
      '$.spec.access.siteCA',
      'needed: the kubeconfig trusts the CA that signs the API certificate (without it the CA is made on the node)',
    );

  let caKey;
  try {
    caKey = parseKey(await readFile(key, 'utf8'));
  } catch (err) {
    throw new UsageError(`--key: cannot read a private key from ${key}: ${(err as Error).message}`);
  }
  if (!supportedKey(caKey))
    throw new UsageError(`--key: ${key} holds a key of type ${describeKey(caKey)}; supported: ${SUPPORTED_KEY_TYPES}`);
  const bundle = certificatesIn(clientCa);
  const caCert = bundle.find((c) => matchesKey(c, caKey));
  if (!caCert) throw new UsageError(`--key: ${key} is not the key of any certificate in spec.access.clientCAFile`);
  const ca = { cert: caCert, key: caKey, chain: chainAbove(caCert, bundle) };

  const notAfter = Math.min(Date.parse(caCert.validTo), now.getTime() + CLIENT_VALIDITY_DAYS * DAY_MS);
  const clientKey = newKey();
  const leaf = await issue(
    {
      commonName: user,
      organizations: ['system:masters'],
      client: true,
      notBefore: new Date(now.getTime() - 60 * 60_000),
      validityDays: Math.floor((notAfter - now.getTime()) / DAY_MS),
    },
    clientKey,
    ca,
  );
  const certPem = withIntermediates(leaf, ca);
  // nothing that would not verify is handed over: the API server would answer Unauthorized
  const problem = chainProblem(certPem, ca, { client: user }, now);
  if (problem) throw new UsageError(`--key: the certificate signed with ${key} does not verify: ${problem}`);
  const server = `https://api.${document.spec.clusterName}.${site.baseDomain}:6443`;
  const name = `${document.spec.clusterName}.${site.baseDomain}`;
  const kubeconfig = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      { name, cluster: { server, 'certificate-authority-data': Buffer.from(siteCa.certPem).toString('base64') } },
    ],
    users: [
      {
        name: user,
        user: {
          'client-certificate-data': Buffer.from(certPem).toString('base64'),
          'client-key-data': Buffer.from(keyToPem(clientKey)).toString('base64'),
        },
      },
    ],
    contexts: [{ name: `${user}@${name}`, context: { cluster: name, user } }],
    'current-context': `${user}@${name}`,
  };
  try {
    await writeFile(out, yaml.dump(kubeconfig), { mode: 0o600, flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST')
      throw new UsageError(`${out} exists; choose another --out FILE`);
    throw err;
  }
  const until = new Date(notAfter).toISOString().slice(0, 10);
  const text = `wrote ${out}: ${user} (system:masters) at ${server}, valid until ${until}; it works once the site's run has put spec.access in place\n`;
  const json = { kubeconfig: out, user, server, notAfter: new Date(notAfter).toISOString() };
  return {
    exitCode: 0,
    stdout: format === 'json' ? `${JSON.stringify(json, null, 2)}\n` : text,
  };
}
