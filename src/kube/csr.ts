/**
 * Kubelet certificate signing requests: what they ask for, and whether they are this node's.
 *
 * The PKCS#10 request is read with node-forge's ASN.1 decoder rather than its
 * certificationRequestFromPem: that one refuses any key that is not RSA, and kubelet makes ECDSA
 * P-256 keys. The request's self-signature is checked with node:crypto, which knows both.
 *
 * The rules follow OpenShift's cluster-machine-approver: a client request comes from the
 * machine-config operator's node-bootstrapper service account (or is the node renewing its own
 * certificate), a serving request comes from the node itself in the system:nodes group; the subject
 * is exactly CN=system:node:<name>, O=system:nodes; the usages are the ones kubelet asks for; client
 * requests carry no subjectAltName, serving requests only this node's names and addresses.
 */
import { createPublicKey, verify } from 'node:crypto';
import { isIP } from 'node:net';
import forge from 'node-forge';
import { canonicalIp } from '../base/addresses.js';

const { asn1 } = forge;
type Asn1 = forge.asn1.Asn1;
// both exist in node-forge and are missing from its type declarations
const bytesToIP = (forge.util as unknown as { bytesToIP(bytes: string): string | null }).bytesToIP;
const fromDer = asn1.fromDer as unknown as (der: string, options: { decodeBitStrings: boolean }) => Asn1;

export const KUBELET_CLIENT_SIGNER = 'kubernetes.io/kube-apiserver-client-kubelet';
export const KUBELET_SERVING_SIGNER = 'kubernetes.io/kubelet-serving';
export const NODE_BOOTSTRAPPER = 'system:serviceaccount:openshift-machine-config-operator:node-bootstrapper';
const NODE_BOOTSTRAPPER_GROUP = 'system:serviceaccounts:openshift-machine-config-operator';
const NODES_GROUP = 'system:nodes';

const OID = {
  commonName: '2.5.4.3',
  organization: '2.5.4.10',
  extensionRequest: '1.2.840.113549.1.9.14',
  subjectAltName: '2.5.29.17',
} as const;

/** Signature algorithms kubelet's crypto (Go's x509) uses for requests, as node:crypto digests. */
const SIGNATURE_DIGESTS: Record<string, string> = {
  '1.2.840.113549.1.1.11': 'sha256',
  '1.2.840.113549.1.1.12': 'sha384',
  '1.2.840.113549.1.1.13': 'sha512',
  '1.2.840.10045.4.3.2': 'sha256',
  '1.2.840.10045.4.3.3': 'sha384',
  '1.2.840.10045.4.3.4': 'sha512',
};

export interface ParsedRequest {
  /** subject attributes in order, e.g. [['O', 'system:nodes'], ['CN', 'system:node:sno']] */
  subject: [string, string][];
  dnsNames: string[];
  ipAddresses: string[];
  emailAddresses: string[];
  uris: string[];
  signatureValid: boolean;
}

const children = (node: Asn1): Asn1[] => (Array.isArray(node.value) ? node.value : []);
const bytes = (node: Asn1): string => (typeof node.value === 'string' ? node.value : '');

function attributeName(oid: string): string {
  if (oid === OID.commonName) return 'CN';
  if (oid === OID.organization) return 'O';
  return oid;
}

function generalNames(ext: string, into: ParsedRequest): void {
  for (const name of children(asn1.fromDer(ext))) {
    if (name.tagClass !== asn1.Class.CONTEXT_SPECIFIC) continue;
    const value = bytes(name);
    if (name.type === 1) into.emailAddresses.push(value);
    else if (name.type === 2) into.dnsNames.push(value);
    else if (name.type === 6) into.uris.push(value);
    else if (name.type === 7) into.ipAddresses.push(bytesToIP(value) ?? `<${value.length}-byte address>`);
  }
}

/** Reads a PEM certificate request; throws on anything that is not one. */
export function parseCertificateRequest(pem: string): ParsedRequest {
  let block: forge.pem.ObjectPEM | undefined;
  try {
    block = forge.pem.decode(pem).find((b) => b.type === 'CERTIFICATE REQUEST' || b.type === 'NEW CERTIFICATE REQUEST');
  } catch {
    block = undefined;
  }
  if (!block) throw new Error('not a PEM certificate request');
  // bit strings left undecoded, so that the info re-encodes to the very bytes that were signed
  const request = fromDer(block.body, { decodeBitStrings: false });
  const [info, algorithm, signature] = children(request);
  if (!info || !algorithm || !signature)
    throw new Error('certificate request is not a SEQUENCE of info, algorithm and signature');
  const [, name, spki, attributes] = children(info);
  if (!name || !spki) throw new Error('certificate request info lacks a subject or a public key');
  const parsed: ParsedRequest = {
    subject: [],
    dnsNames: [],
    ipAddresses: [],
    emailAddresses: [],
    uris: [],
    signatureValid: false,
  };
  for (const rdn of children(name)) {
    for (const pair of children(rdn)) {
      const [oid, value] = children(pair);
      if (oid && value)
        parsed.subject.push([attributeName(asn1.derToOid(bytes(oid))), forge.util.decodeUtf8(bytes(value))]);
    }
  }
  for (const attribute of attributes ? children(attributes) : []) {
    const [oid, values] = children(attribute);
    if (!oid || !values || asn1.derToOid(bytes(oid)) !== OID.extensionRequest) continue;
    for (const extensions of children(values)) {
      for (const extension of children(extensions)) {
        const parts = children(extension);
        const id = parts[0];
        const value = parts[parts.length - 1];
        if (id && value && asn1.derToOid(bytes(id)) === OID.subjectAltName) generalNames(bytes(value), parsed);
      }
    }
  }
  const digest = SIGNATURE_DIGESTS[asn1.derToOid(bytes(children(algorithm)[0] ?? algorithm))];
  if (digest) {
    try {
      const key = createPublicKey({
        key: Buffer.from(asn1.toDer(spki).getBytes(), 'binary'),
        format: 'der',
        type: 'spki',
      });
      // a BIT STRING's first byte counts its unused bits
      const sig = Buffer.from(bytes(signature).slice(1), 'binary');
      parsed.signatureValid = verify(digest, Buffer.from(asn1.toDer(info).getBytes(), 'binary'), key, sig);
    } catch {
      parsed.signatureValid = false;
    }
  }
  return parsed;
}

/** A CSR object as the API returns it (certificates.k8s.io/v1), the fields judged here. */
export interface CsrObject {
  metadata?: { name?: string };
  spec: { request: string; signerName: string; usages?: string[]; username?: string; groups?: string[] };
  status?: { conditions?: { type: string; status?: string }[]; certificate?: string };
}

/** What counts as this node. */
export interface NodeIdentity {
  hostname: string;
  /** addresses a serving certificate may name: the internal IP and the site's */
  ips: readonly string[];
  /**
   * the node's name before a rename: kubelet, restarted under the new name with its certificate
   * of the former, asks for the new client certificate as the former node (client-go
   * util/certificate/certificate_manager.go rotates at once when the subject differs)
   */
  former?: string;
}

export type CsrKind = 'client' | 'serving';

export type Verdict = { approve: true; kind: CsrKind; why: string } | { approve: false; kind?: CsrKind; why: string };

export function csrState(csr: CsrObject): 'pending' | 'approved' | 'denied' | 'failed' {
  const conditions = csr.status?.conditions ?? [];
  const has = (type: string) => conditions.some((c) => c.type === type && c.status !== 'False');
  if (has('Denied')) return 'denied';
  if (has('Failed')) return 'failed';
  if (has('Approved')) return 'approved';
  return 'pending';
}

const kindOf = (signer: string): CsrKind | undefined =>
  signer === KUBELET_CLIENT_SIGNER ? 'client' : signer === KUBELET_SERVING_SIGNER ? 'serving' : undefined;

/** kubelet asks for these; key encipherment is left out for ECDSA keys */
function usagesFit(kind: CsrKind, usages: readonly string[]): boolean {
  const wanted = kind === 'client' ? 'client auth' : 'server auth';
  const allowed = new Set(['digital signature', 'key encipherment', wanted]);
  return (
    usages.length === new Set(usages).size &&
    usages.includes('digital signature') &&
    usages.includes(wanted) &&
    usages.every((u) => allowed.has(u))
  );
}

/** Which node a request's subject names, when it names one the way kubelet does. */
export function requestedNode(request: ParsedRequest): string | undefined {
  const cn = request.subject.filter(([k]) => k === 'CN');
  const o = request.subject.filter(([k]) => k === 'O');
  if (cn.length !== 1 || o.length !== 1 || o[0]![1] !== NODES_GROUP || request.subject.length !== 2) return undefined;
  const name = cn[0]![1];
  return name.startsWith('system:node:') && name.length > 'system:node:'.length
    ? name.slice('system:node:'.length)
    : undefined;
}

/** Whether this pending request is this node's own, and why (or why not). */
export function judgeCsr(csr: CsrObject, node: NodeIdentity): Verdict {
  const kind = kindOf(csr.spec.signerName);
  if (!kind) return { approve: false, why: `signer ${csr.spec.signerName} is not a kubelet signer` };
  let request: ParsedRequest;
  try {
    request = parseCertificateRequest(Buffer.from(csr.spec.request, 'base64').toString('utf8'));
  } catch (err) {
    return {
      approve: false,
      kind,
      why: `the request cannot be read: ${err instanceof Error ? err.message : String(err)}`,
    };
  }
  if (!request.signatureValid) return { approve: false, kind, why: 'the request is not signed by the key it carries' };
  const subjectNode = requestedNode(request);
  if (subjectNode === undefined) {
    return {
      approve: false,
      kind,
      why: `subject ${request.subject.map(([k, v]) => `${k}=${v}`).join(', ')} is not CN=system:node:<name>, O=system:nodes`,
    };
  }
  if (subjectNode !== node.hostname)
    return { approve: false, kind, why: `it is for node ${subjectNode}, not this node (${node.hostname})` };
  const usages = csr.spec.usages ?? [];
  if (!usagesFit(kind, usages))
    return {
      approve: false,
      kind,
      why: `usages [${usages.join(', ')}] are not what kubelet asks for a ${kind} certificate`,
    };
  const username = csr.spec.username ?? '';
  const groups = csr.spec.groups ?? [];
  const self = `system:node:${node.hostname}`;
  if (kind === 'client') {
    const bootstrapper = username === NODE_BOOTSTRAPPER && groups.includes(NODE_BOOTSTRAPPER_GROUP);
    const former = node.former !== undefined && username === `system:node:${node.former}`;
    const renewal = (username === self || former) && groups.includes(NODES_GROUP);
    if (!bootstrapper && !renewal)
      return {
        approve: false,
        kind,
        why: `requested by ${username || '(nobody)'}, neither the node-bootstrapper nor the node itself`,
      };
    const sans = [...request.dnsNames, ...request.ipAddresses, ...request.emailAddresses, ...request.uris];
    if (sans.length > 0)
      return { approve: false, kind, why: `a client request with subjectAltNames (${sans.join(', ')})` };
    return {
      approve: true,
      kind,
      why: `client certificate for ${self}, requested by ${bootstrapper ? 'the node-bootstrapper' : former ? `the node under its former name ${node.former}` : 'the node itself'}`,
    };
  }
  if (username !== self || !groups.includes(NODES_GROUP))
    return {
      approve: false,
      kind,
      why: `requested by ${username || '(nobody)'}, not by the node itself in ${NODES_GROUP}`,
    };
  if (request.emailAddresses.length > 0 || request.uris.length > 0)
    return { approve: false, kind, why: 'a serving request with e-mail or URI names' };
  const ips = new Set(node.ips.map(canonicalIp));
  const foreignNames = request.dnsNames.filter((n) => n !== node.hostname);
  const foreignIps = request.ipAddresses.filter((ip) => isIP(ip) === 0 || !ips.has(canonicalIp(ip)));
  if (foreignNames.length + foreignIps.length > 0)
    return {
      approve: false,
      kind,
      why: `names that are not this node's: ${[...foreignNames, ...foreignIps].join(', ')}`,
    };
  if (request.dnsNames.length + request.ipAddresses.length === 0)
    return { approve: false, kind, why: 'a serving request without any name' };
  return {
    approve: true,
    kind,
    why: `serving certificate for ${[...request.dnsNames, ...request.ipAddresses].join(', ')}, requested by the node itself`,
  };
}
