/** PEM text read into certificates, for the layers that check certificates without issuing any. */
import { X509Certificate } from 'node:crypto';
import forge from 'node-forge';

/** The certificate blocks of a PEM text (a leaf, then its chain). */
export function certificatesIn(pem: string): X509Certificate[] {
  return forge.pem
    .decode(pem)
    .filter((block) => block.type === 'CERTIFICATE')
    .map((block) => new X509Certificate(Buffer.from(block.body, 'binary')));
}

/** The type of each PEM block (CERTIFICATE, PRIVATE KEY, ...), in order; throws on text that is not PEM. */
export function pemBlockTypes(pem: string): string[] {
  return forge.pem.decode(pem).map((block) => block.type);
}
