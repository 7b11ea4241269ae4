/** Certificates made by the real openssl, for tests that need a CA the agent did not make. */
import { execFileSync } from 'node:child_process';
import path from 'node:path';

/** A self-signed P-256 CA made by openssl: its certificate and key as PEM files in `dir`. */
export function opensslCa(dir: string, name: string): { crt: string; key: string } {
  const crt = path.join(dir, `${name}.crt`);
  const key = path.join(dir, `${name}.key`);
  execFileSync('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '365',
    '-subj', `/CN=${name}`, '-keyout', key, '-out', crt,
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign',
  ], { stdio: 'pipe' }); // prettier-ignore
  return { crt, key };
}

/** A self-signed RSA-2048 leaf made by openssl, subject `subject`: its certificate and key as PEM files in `dir`. */
export function opensslSelfSigned(
  dir: string,
  name: string,
  { subject, days, san }: { subject: string; days: number; san?: string },
): { crt: string; key: string } {
  const crt = path.join(dir, `${name}.crt`);
  const key = path.join(dir, `${name}.key`);
  const ext = san === undefined ? [] : ['-addext', `subjectAltName=${san}`];
  execFileSync('openssl', [
    'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', String(days),
    '-subj', subject, ...ext, '-keyout', key, '-out', crt,
  ], { stdio: 'pipe' }); // prettier-ignore
  return { crt, key };
}
