/**
 * Secret scrubbing shared by the logger, status, plan output, error messages and the support
 * bundle: applied once at each exit, never left to each caller. A secret is found by its own shape
 * (a PEM private key, a `sha256~` or JWT token, a bcrypt hash), by the name it is given (`password`,
 * `auth`, `client-key-data`, ...) in any quoting (JSON escaped once or twice, YAML, `key=value`,
 * YAML block scalars), and inside base64 or URL encoding, which is decoded and scrubbed in turn:
 * an encoded run that hides a secret goes whole.
 */

/**
 * names whose value is a secret, as they are written in files, objects and headers; a name at the
 * end of a JSON path (`$.spec.tls_private_key: not a PEM key`) names a field, not its value
 */
const SECRET_NAME = String.raw`(?:[\w-][\w.-]*[-_.])?(?:pull[-_]?secret|password|passwd|passphrase|secret|token|access[-_]?token|refresh[-_]?token|id[-_]?token|bearer[-_]?token|identitytoken|registrytoken|auth|client[-_]key[-_]data|tls\.key|\.dockerconfigjson|\.dockercfg|private[-_]?key)`;
/** a field name in an object: the names above, and the Secret's and key files' own */
const SECRET_KEY = new RegExp(
  String.raw`^(?:${SECRET_NAME}|auths|authorization|bearerToken|privateKey|keyPem|key|data|stringData|[a-z\d]*(?:Password|Token|Secret))$`,
  'i',
);
/** a quote as it is written raw, JSON-escaped once or twice, or in a shell */
const QUOTE = String.raw`(?:\\*["'])`;
/** `name: value`, `"name":"value"`, `\"name\":\"value\"`, `name=value`: the value goes */
const NAMED_VALUE = new RegExp(
  String.raw`(?<![\w.$-])(${QUOTE}?${SECRET_NAME}${QUOTE}?[ \t]*[:=][ \t]*)(?:(${QUOTE})[^"'\\\n]*|[^\s"'\\&,;}\]]+)`,
  'gi',
);
/** `Authorization: <scheme> <credentials>`: the scheme stays, the whole rest of the header goes */
const AUTH_HEADER =
  /(\bauthorization\\*["']?[ \t]*[:=][ \t]*\\*["']?)(?![ \t]*(?:\w+[ \t]+)?<redacted)((?:Bearer|Basic|Digest|Negotiate|token)[ \t]+)?[^\s"'\\][^"'\\\n]*/gi;
/** a YAML block scalar under a secret's name: `password: |` and the lines indented under it */
const BLOCK_HEAD = new RegExp(String.raw`(?<![\w.$-])["']?${SECRET_NAME}["']?[ \t]*:[ \t]*[|>][-+1-9]*[ \t]*$`, 'i');
const PRIVATE_KEY_BLOCK = /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(-----END [A-Z ]*PRIVATE KEY-----|$)/g;
const BEARER = /\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{8,}/g;
/** an OpenShift OAuth access token */
const SHA256_TOKEN = /\bsha256~[A-Za-z0-9_-]{8,}/g;
/** a JSON web token: a service account's, an OIDC id token */
const JWT = /\beyJ[A-Za-z0-9_-]{6,}\.eyJ[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]*/g;
/** user:password@ in a URL (a proxy's, for one): the user stays, the password goes */
const URL_PASSWORD = /\b([a-z][a-z0-9+.-]*:\/\/[^\s/:@"]+):[^\s/@"]*@/gi;
/** a bcrypt hash (the kubeadmin password's): it can be attacked offline, so it is a secret too */
const BCRYPT = /\$2[abxy]?\$\d{2}\$[./A-Za-z0-9]{53}/g;
/** a run of base64 (or base64url) long enough to hide a key or an auth file */
const BASE64_RUN = /[A-Za-z0-9+/_-]{24,}={0,2}/g;
/** a run of text without quotes or blanks, which may be URL-encoded */
const WORD = /[^\s"'<>]+/g;
/** longer encoded runs are left as they are: no secret of a node is this large */
const MAX_ENCODED = 256 * 1024;
const MAX_DEPTH = 3;

export const REDACTED = '<redacted>';
const ENCODED_SECRET = '<redacted: encoded secret>';

export function scrubText(text: string): string {
  return scrubAt(text, 0);
}

function scrubAt(text: string, depth: number): string {
  const plain = scrubBlockScalars(text)
    .replace(PRIVATE_KEY_BLOCK, '<redacted: private key>')
    .replace(BEARER, '$1 <redacted>')
    .replace(AUTH_HEADER, `$1$2${REDACTED}`)
    .replace(SHA256_TOKEN, 'sha256~<redacted>')
    .replace(JWT, '<redacted: token>')
    .replace(NAMED_VALUE, (_all, head: string, quote: string | undefined) => `${head}${quote ?? ''}${REDACTED}`)
    .replace(URL_PASSWORD, `$1:${REDACTED}@`)
    .replace(BCRYPT, '<redacted: password hash>');
  if (depth >= MAX_DEPTH) return plain;
  return plain
    .replace(BASE64_RUN, (run) => (hidesSecret(decodeBase64(run), depth) ? ENCODED_SECRET : run))
    .replace(WORD, (word) => (word.includes('%') && hidesSecret(decodeUrl(word), depth) ? ENCODED_SECRET : word));
}

/** whether decoded text holds a secret: a private key in DER, or text that scrubbing would change */
function hidesSecret(decoded: Buffer | string | undefined, depth: number): boolean {
  if (decoded === undefined) return false;
  if (typeof decoded !== 'string') {
    if (isPrivateKeyDer(decoded)) return true;
    if (!isText(decoded)) return false;
    decoded = decoded.toString('utf8');
  }
  return scrubAt(decoded, depth + 1) !== decoded;
}

function decodeBase64(run: string): Buffer | undefined {
  if (run.length > MAX_ENCODED) return undefined;
  return Buffer.from(run.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
}

function decodeUrl(word: string): string | undefined {
  if (word.length > MAX_ENCODED) return undefined;
  try {
    return decodeURIComponent(word.replace(/\+/g, ' '));
  } catch {
    return word.replace(/%([0-9A-Fa-f]{2})/g, (_all, hex: string) => String.fromCharCode(parseInt(hex, 16)));
  }
}

/** printable text: what a decoded auth file, kubeconfig or PEM is, and random bytes are not */
function isText(bytes: Buffer): boolean {
  let printable = 0;
  for (const b of bytes) if ((b >= 0x20 && b < 0x7f) || b === 0x0a || b === 0x0d || b === 0x09) printable++;
  return bytes.length > 0 && printable / bytes.length > 0.95;
}

/**
 * A DER private key of any type starts as a SEQUENCE whose first element is a small INTEGER version
 * (0 for PKCS#1 RSA, DSA and PKCS#8, 1 for SEC 1 EC and PKCS#8 v2); a certificate or a public key
 * starts with a SEQUENCE instead.
 */
function isPrivateKeyDer(der: Buffer): boolean {
  if (der.length < 16 || der[0] !== 0x30) return false;
  const lengthBytes = der[1]! & 0x80 ? der[1]! & 0x7f : 0;
  const at = 2 + lengthBytes;
  return der[at] === 0x02 && der[at + 1] === 0x01 && (der[at + 2] === 0x00 || der[at + 2] === 0x01);
}

/**
 * The lines of a YAML block scalar under a secret's name go whole: every line after the name's line
 * indented deeper than that line (a journal's continuation lines are indented past its prefix too).
 */
function scrubBlockScalars(text: string): string {
  if (!/[|>]/.test(text)) return text;
  const lines = text.split('\n');
  const out: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    out.push(line);
    const head = BLOCK_HEAD.exec(line);
    if (!head) continue;
    const column = indentOf(line);
    let end = i + 1;
    while (end < lines.length && (lines[end]!.trim() === '' || indentOf(lines[end]!) > column)) end++;
    if (end > i + 1) out.push(`${' '.repeat(column + 2)}${REDACTED}`);
    i = end - 1;
  }
  return out.join('\n');
}

const indentOf = (line: string): number => line.length - line.trimStart().length;

/** A short, secret-free description of a registry auth file. */
export function describeAuths(value: unknown): string {
  const auths = (value as { auths?: unknown } | null)?.auths;
  const n = auths && typeof auths === 'object' ? Object.keys(auths).length : 0;
  return `<redacted: ${n} ${n === 1 ? 'registry' : 'registries'}>`;
}

/** Deep copy with secret-looking keys and values replaced. */
export function redactSecrets<T>(value: T): T {
  const seen = new WeakSet<object>();
  const walk = (v: unknown, key?: string): unknown => {
    if (key !== undefined && SECRET_KEY.test(key) && v !== undefined && v !== null) {
      if (/^(pullSecret|auths)$/i.test(key)) return describeAuths(key.toLowerCase() === 'auths' ? { auths: v } : v);
      if (typeof v !== 'boolean' && typeof v !== 'number') return REDACTED;
    }
    if (typeof v === 'string') return scrubText(v);
    if (v === null || typeof v !== 'object') return v;
    if (seen.has(v)) return '[circular]';
    seen.add(v);
    if (v instanceof Error) return { type: v.name, message: scrubText(v.message) };
    if (Array.isArray(v)) return v.map((item) => walk(item));
    return Object.fromEntries(Object.entries(v).map(([k, item]) => [k, walk(item, k)]));
  };
  return walk(value) as T;
}
