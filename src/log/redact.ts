/**
 * Secret scrubbing shared by the logger, status, plan output and error
 * messages: applied once at each exit, never left to each caller.
 */
const SECRET_KEY =
  /^(pullSecret|auths?|password|passwd|token|bearerToken|secret|privateKey|keyPem|key|identitytoken|registrytoken|tls\.key|data|stringData)$/i;
const PRIVATE_KEY_BLOCK = /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(-----END [A-Z ]*PRIVATE KEY-----|$)/g;
const BEARER = /\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{8,}/g;
const DOCKER_AUTH = /("auth"\s*:\s*")[^"]*(")/g;
/** user:password@ in a URL (a proxy's, for one): the user stays, the password goes */
const URL_PASSWORD = /\b([a-z][a-z0-9+.-]*:\/\/[^\s/:@"]+):[^\s/@"]*@/gi;

/** a bcrypt hash (the kubeadmin password's): it can be attacked offline, so it is a secret too */
const BCRYPT = /\$2[abxy]?\$\d{2}\$[./A-Za-z0-9]{53}/g;

export const REDACTED = '<redacted>';

export function scrubText(text: string): string {
  return text
    .replace(PRIVATE_KEY_BLOCK, '<redacted: private key>')
    .replace(BEARER, '$1 <redacted>')
    .replace(DOCKER_AUTH, `$1${REDACTED}$2`)
    .replace(URL_PASSWORD, `$1:${REDACTED}@`)
    .replace(BCRYPT, '<redacted: password hash>');
}

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
