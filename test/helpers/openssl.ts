/** Certificates made by the real openssl, for tests that need a CA the agent did not make. */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
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

/**
 * The installer's admin credentials, made by openssl as the installer makes them
 * (openshift/installer pkg/asset/tls/adminkubeconfig.go: an RSA-2048 CA `admin-kubeconfig-signer`,
 * OU=openshift, ten years; the client `CN=system:admin, O=system:masters` it signs): PEM files in `dir`.
 */
export function installerAdminCredentials(dir: string): { ca: string; crt: string; key: string } {
  const ca = path.join(dir, 'admin-kubeconfig-signer.crt');
  const caKey = path.join(dir, 'admin-kubeconfig-signer.key');
  const csr = path.join(dir, 'admin.csr');
  const crt = path.join(dir, 'admin.crt');
  const key = path.join(dir, 'admin.key');
  execFileSync('openssl', [
    'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '3650',
    '-subj', '/OU=openshift/CN=admin-kubeconfig-signer', '-keyout', caKey, '-out', ca,
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign,digitalSignature',
  ], { stdio: 'pipe' }); // prettier-ignore
  execFileSync('openssl', [
    'req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/O=system:masters/CN=system:admin', '-keyout', key, '-out', csr,
  ], { stdio: 'pipe' }); // prettier-ignore
  const ext = path.join(dir, 'admin.ext');
  writeFileSync(
    ext,
    'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n',
  );
  execFileSync('openssl', [
    'x509', '-req', '-in', csr, '-CA', ca, '-CAkey', caKey, '-CAcreateserial', '-days', '3650', '-out', crt, '-extfile', ext,
  ], { stdio: 'pipe' }); // prettier-ignore
  return { ca, crt, key };
}

/** An RSA-2048 serving certificate for `san` (DNS:*.apps.example.com) signed by `ca`: PEM files in `dir`. */
export function opensslServing(
  dir: string,
  name: string,
  ca: { crt: string; key: string },
  san: string,
): { crt: string; key: string } {
  const csr = path.join(dir, `${name}.csr`);
  const crt = path.join(dir, `${name}.crt`);
  const key = path.join(dir, `${name}.key`);
  const ext = path.join(dir, `${name}.ext`);
  writeFileSync(ext, `subjectAltName=${san}\nextendedKeyUsage=serverAuth\nbasicConstraints=critical,CA:FALSE\n`);
  execFileSync(
    'openssl',
    ['req', '-newkey', 'rsa:2048', '-nodes', '-subj', `/CN=${name}`, '-keyout', key, '-out', csr],
    {
      stdio: 'pipe',
    },
  );
  execFileSync('openssl', [
    'x509', '-req', '-in', csr, '-CA', ca.crt, '-CAkey', ca.key, '-CAcreateserial', '-days', '365', '-out', crt, '-extfile', ext,
  ], { stdio: 'pipe' }); // prettier-ignore
  return { crt, key };
}
