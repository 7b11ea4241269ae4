/**
 * library-go's resource hashes, as the operators annotate their pod templates with them:
 * openshift/library-go pkg/operator/resource/resourcehash/as_configmap.go (master @93ac9206):
 *
 *   GetConfigMapHash: hasher := fnv.New32(); json.NewEncoder(hasher).Encode(obj.Data);
 *   base64.URLEncoding.EncodeToString(hasher.Sum(nil))
 *   mapKeyFor(resource, namespace, name): "<namespace>.<name>.<resource>", the annotation key
 *   after the operator's "operator.openshift.io/dep-" prefix.
 *
 * Go's json.Encoder writes a map[string]string with its keys sorted bytewise, each string as
 * encoding/json encode.go encodeState.string does with HTML escaping on (the Encoder's default):
 * `"` and `\` backslashed, \n \r \t as such, other bytes below 0x20 and < > & as \u00XX, U+2028
 * and U+2029 as \u2028 and \u2029, everything else as it is; then a newline. hash/fnv New32 is
 * FNV-1 (multiply, then xor), big-endian in Sum. test/cluster/models/upstream/configmap-hash.go
 * runs the upstream function for the vectors in configmap-hash.json.
 */

const FNV32_OFFSET = 2166136261;
const FNV32_PRIME = 16777619;

function goJsonString(s: string): string {
  let out = '"';
  for (const ch of s) {
    const code = ch.codePointAt(0)!;
    if (ch === '"' || ch === '\\') out += `\\${ch}`;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\r') out += '\\r';
    else if (ch === '\t') out += '\\t';
    else if (code < 0x20 || ch === '<' || ch === '>' || ch === '&' || code === 0x2028 || code === 0x2029)
      out += `\\u${code.toString(16).padStart(4, '0')}`;
    else out += ch;
  }
  return `${out}"`;
}

/** GetConfigMapHash of a ConfigMap's data. */
export function getConfigMapHash(data: Readonly<Record<string, string>>): string {
  const keys = Object.keys(data)
    .map((k) => Buffer.from(k, 'utf8'))
    .sort(Buffer.compare)
    .map((k) => k.toString('utf8'));
  const encoded = `{${keys.map((k) => `${goJsonString(k)}:${goJsonString(data[k]!)}`).join(',')}}\n`;
  let hash = FNV32_OFFSET;
  for (const byte of Buffer.from(encoded, 'utf8')) hash = (Math.imul(hash, FNV32_PRIME) >>> 0) ^ byte;
  const sum = Buffer.alloc(4);
  sum.writeUInt32BE(hash >>> 0);
  return sum.toString('base64').replace(/\+/g, '-').replace(/\//g, '_');
}

/** The pod template annotation an operator's resourcehash of a ConfigMap goes under. */
export const configMapHashAnnotation = (namespace: string, name: string) =>
  `operator.openshift.io/dep-${namespace}.${name}.configmap`;
