/**
 * CAs as organisations make them, with the openssl command line: a root by `openssl req -x509`, an
 * intermediate signed by `openssl x509 -req`, a CA with chosen dates by `openssl ca`. Nothing here
 * is made by the agent's own issuer.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export type KeyKind = 'rsa2048' | 'rsa3072' | 'rsa4096' | 'p256' | 'p384' | 'rsa1024' | 'p521' | 'ed25519';

/** openssl `req` arguments that make a new key of each kind. */
export const NEW_KEY: Record<KeyKind, string[]> = {
  rsa2048: ['-newkey', 'rsa:2048'],
  rsa3072: ['-newkey', 'rsa:3072'],
  rsa4096: ['-newkey', 'rsa:4096'],
  rsa1024: ['-newkey', 'rsa:1024'],
  p256: ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256'],
  p384: ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-384'],
  p521: ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-521'],
  ed25519: ['-newkey', 'ed25519'],
};

export interface OpensslCa {
  /** the CA file as a site gives it: the CA, then its chain up to the root */
  crt: string;
  key: string;
  /** the root alone: what a client trusts */
  root: string;
}

export const openssl = (args: readonly string[], input?: string): string =>
  execFileSync('openssl', args, { input, encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] });

const CA_EXTENSIONS = [
  'basicConstraints=critical,CA:TRUE',
  'keyUsage=critical,keyCertSign,cRLSign',
  'subjectKeyIdentifier=hash',
  'authorityKeyIdentifier=keyid:always',
];

/**
 * A self-signed root. `extensions` undefined: openssl's own defaults for `req -x509` (its
 * configuration's v3_ca: basicConstraints, key identifiers, no keyUsage), as most people run it.
 */
export function rootCa(dir: string, name: string, kind: KeyKind, extensions?: string[]): OpensslCa {
  mkdirSync(dir, { recursive: true });
  const crt = path.join(dir, `${name}.crt`);
  const key = path.join(dir, `${name}.key`);
  openssl([
    'req', '-x509', ...NEW_KEY[kind], '-nodes', '-days', '365', '-subj', `/O=Store Corp/CN=${name}`,
    '-keyout', key, '-out', crt, ...(extensions ?? []).flatMap((e) => ['-addext', e]),
  ]); // prettier-ignore
  return { crt, key, root: crt };
}

/** An intermediate CA signed by `parent`; its file holds it, then the parent's chain. */
export function intermediateCa(dir: string, name: string, kind: KeyKind, parent: OpensslCa): OpensslCa {
  const crt = path.join(dir, `${name}.crt`);
  const key = path.join(dir, `${name}.key`);
  const csr = path.join(dir, `${name}.csr`);
  const ext = path.join(dir, `${name}.ext`);
  writeFileSync(ext, `[ca]\n${CA_EXTENSIONS.join('\n')}\n`);
  openssl([
    'req',
    '-new',
    ...NEW_KEY[kind],
    '-nodes',
    '-subj',
    `/O=Store Corp/CN=${name}`,
    '-keyout',
    key,
    '-out',
    csr,
  ]);
  const own = openssl([
    'x509', '-req', '-in', csr, '-CA', parent.crt, '-CAkey', parent.key, '-set_serial', '0x2a', '-days', '365',
    '-sha256', '-extfile', ext, '-extensions', 'ca',
  ]); // prettier-ignore
  writeFileSync(crt, own + readFileSync(parent.crt, 'utf8'));
  return { crt, key, root: parent.root };
}

/** A self-signed CA valid only between two dates (YYYYMMDDHHMMSSZ), made by `openssl ca`. */
export function datedCa(dir: string, name: string, start: string, end: string, kind: KeyKind = 'rsa2048'): OpensslCa {
  const db = path.join(dir, `${name}-db`);
  mkdirSync(db, { recursive: true });
  writeFileSync(path.join(db, 'index.txt'), '');
  const config = path.join(db, 'ca.cnf');
  writeFileSync(
    config,
    [
      '[ca]', 'default_ca=local', '[local]', `database=${db}/index.txt`, `new_certs_dir=${db}`, 'rand_serial=yes',
      'default_md=sha256', 'policy=any', 'email_in_dn=no', '[any]', 'commonName=supplied', '[v3]', ...CA_EXTENSIONS,
    ].join('\n'),
  ); // prettier-ignore
  const crt = path.join(dir, `${name}.crt`);
  const key = path.join(dir, `${name}.key`);
  const csr = path.join(db, 'req.csr');
  openssl(['req', '-new', ...NEW_KEY[kind], '-nodes', '-subj', `/CN=${name}`, '-keyout', key, '-out', csr]);
  openssl([
    'ca', '-batch', '-selfsign', '-notext', '-config', config, '-keyfile', key, '-in', csr, '-out', crt,
    '-startdate', start, '-enddate', end, '-extensions', 'v3',
  ]); // prettier-ignore
  return { crt, key, root: crt };
}
