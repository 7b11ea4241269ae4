/**
 * Over many sites, native and image-based, with secrets drawn anew for each (fast-check): once a
 * folder is sealed to a node's key and signed, no 16-byte window of any secret's private material
 * is left in any byte of the folder, and the node's identity opens the folder back to the very
 * site it was. Keys and certificates are made by the real openssl.
 */
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Decrypter, generateX25519Identity, identityToRecipient } from 'age-encryption';
import fc from 'fast-check';
import yaml from 'js-yaml';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { admitSite, offNode } from '../../src/config/admit.js';
import type { Unsealer } from '../../src/config/sealed.js';
import { sealAndSign } from '../../src/trust/seal-folder.js';
import { decodeSealed } from '../../src/trust/sealed-format.js';
import { generateSigningKey, readPrivateKey, SIGNATURE_FILE } from '../../src/trust/signature.js';
import { EXAMPLE, REPO } from '../helpers/cli.js';
import { openssl } from '../certs/openssl-cas.js';
import { opensslCa, opensslServing } from '../helpers/openssl.js';

const IBI_EXAMPLE = path.join(REPO, 'examples/ibi-config-media');
const MANIFEST = 'cluster-configuration/manifest.json';
const CHARS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789!#$*()+-._~';
const secretText = fc.string({ unit: fc.constantFrom(...CHARS), minLength: 16, maxLength: 48 });

let work: string;
let identity: string;
let recipient: string;
const signingKey = readPrivateKey(generateSigningKey().privatePem, 'factory.key');
/** a few site CAs with a serving certificate each, and signer keys for the image-based media */
const pairs: { dir: string; caKey: string; caCrt: string; key: string; crt: string }[] = [];
const signers: string[] = [];

/** the node's side, straight from its identity: what the systemd credential would give */
const unsealer = (): Unsealer => ({
  async open(armored) {
    const decrypter = new Decrypter();
    decrypter.addIdentity(identity);
    return Buffer.from(await decrypter.decrypt(decodeSealed(armored)));
  },
  forget: () => undefined,
});

beforeAll(async () => {
  work = mkdtempSync(path.join(tmpdir(), 'sealed-property-'));
  identity = await generateX25519Identity();
  recipient = await identityToRecipient(identity);
  for (let i = 0; i < 3; i += 1) {
    const dir = path.join(work, `pair-${i}`);
    cpSync(EXAMPLE, dir, { recursive: true });
    const ca = opensslCa(dir, `site-ca-${i}`);
    const leaf = opensslServing(dir, `ingress-${i}`, ca, 'DNS:*.apps.sno.store42.example.com');
    pairs.push({ dir, caKey: ca.key, caCrt: ca.crt, key: leaf.key, crt: leaf.crt });
    signers.push(openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256']));
  }
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** a PEM's base64 body on one line */
const keyMaterial = (pem: string) => pem.replace(/-----(BEGIN|END) [A-Z ]+-----|\n|\\n/g, '');

/**
 * What the folder shows in clear whatever is sealed: its certificates (a private key carries its
 * public half and its algorithm's identifier, which the certificates beside it show too).
 */
const certificatesIn = (dir: string) =>
  readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => readFileSync(path.join(e.parentPath, e.name), 'utf8'))
    .flatMap((text) => text.match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? [])
    .map(keyMaterial)
    .join(' ');

interface Drawn {
  ibi: boolean;
  inline: boolean;
  pair: number;
  auth: string;
  user: string;
  password: string;
}

/** lays a site folder with the drawn secrets; returns it and each secret with what of it is public */
function laySite(dir: string, d: Drawn): { material: string; public?: string }[] {
  const auth = Buffer.from(`robot:${d.auth}`).toString('base64');
  const pullSecret = { auths: { 'registry.store42.example.com:5000': { auth } } };
  const proxy = `http://${d.user}:${d.password}@proxy.store42.example.com:3128`;
  if (d.ibi) {
    cpSync(IBI_EXAMPLE, dir, { recursive: true });
    const file = path.join(dir, MANIFEST);
    const manifest = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
    manifest.pull_secret = JSON.stringify(pullSecret);
    manifest.proxy = { httpsProxy: proxy, noProxy: '.store43.example.com' };
    manifest.KubeconfigCryptoRetention = {
      KubeAPICrypto: { ServingCrypto: { localhost_signer_private_key: signers[d.pair] } },
    };
    writeFileSync(file, JSON.stringify(manifest));
    return [
      { material: auth },
      { material: d.password },
      { material: keyMaterial(signers[d.pair]!), public: certificatesIn(dir) },
    ];
  }
  const pair = pairs[d.pair]!;
  cpSync(pair.dir, dir, { recursive: true });
  const doc = yaml.load(readFileSync(path.join(dir, 'site-config.yaml'), 'utf8')) as { spec: Record<string, unknown> };
  if (d.inline) {
    delete doc.spec.pullSecretFile;
    doc.spec.pullSecret = pullSecret;
  } else writeFileSync(path.join(dir, 'pull-secret.json'), JSON.stringify(pullSecret));
  doc.spec.certificates = { ingress: { certFile: path.basename(pair.crt), keyFile: path.basename(pair.key) } };
  doc.spec.access = { siteCA: { certFile: path.basename(pair.caCrt), keyFile: path.basename(pair.caKey) } };
  doc.spec.proxy = { httpsProxy: proxy };
  writeFileSync(path.join(dir, 'site-config.yaml'), yaml.dump(doc));
  const pem = (file: string) => keyMaterial(readFileSync(file, 'utf8'));
  const certificates = certificatesIn(dir);
  return [
    { material: auth },
    { material: d.password },
    { material: pem(pair.key), public: certificates },
    { material: pem(pair.caKey), public: certificates },
  ];
}

function leaks(dir: string, secrets: { material: string; public?: string }[]): string[] {
  const bytes = readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => readFileSync(path.join(e.parentPath, e.name)));
  const found: string[] = [];
  for (const secret of secrets)
    for (let i = 0; i + 16 <= secret.material.length; i += 1) {
      const window = secret.material.slice(i, i + 16);
      if (secret.public?.includes(window)) continue;
      if (bytes.some((b) => b.includes(window))) {
        found.push(window);
        break;
      }
    }
  return found;
}

it('leaves no byte sequence of any plaintext secret on a sealed stick, and its node opens the same site', async () => {
  let n = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.record({
        ibi: fc.boolean(),
        inline: fc.boolean(),
        pair: fc.integer({ min: 0, max: 2 }),
        auth: secretText,
        user: fc.string({ unit: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz'), minLength: 4, maxLength: 12 }),
        password: secretText,
      }),
      async (drawn) => {
        const dir = path.join(work, `site-${(n += 1)}`);
        const secrets = laySite(dir, drawn);
        // the drawn secrets are in the folder before sealing: the scan can find them
        expect(leaks(dir, secrets)).toHaveLength(secrets.length);
        const now = new Date();
        const plain = await admitSite(dir, offNode(now));
        const { doc } = await sealAndSign(signingKey, plain, { now, node: { serial: 'SN1234' }, nodeKey: recipient });
        writeFileSync(path.join(dir, SIGNATURE_FILE), JSON.stringify(doc));
        expect(leaks(dir, secrets)).toEqual([]);
        const opened = await admitSite(dir, { ...offNode(now), unseal: unsealer() });
        expect(opened.site).toEqual(plain.site);
        rmSync(dir, { recursive: true });
      },
    ),
    { numRuns: 40 },
  );
});
