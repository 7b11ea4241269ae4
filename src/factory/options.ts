/**
 * The factory's settings for the MachineConfigs, checked as the agent will use them: the internal
 * IP (CIDR), the agent's image (by digest) and the trust anchors (public keys the agent accepts).
 * Shared by `factory prepare` and scripts/render-machineconfigs.ts; each error names its setting.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parseCidr } from '../base/addresses.js';
import { parseRevokedKeys, REVOKED_KEYS_NAME } from '../trust/revocation.js';
import { readPublicKey } from '../trust/signature.js';

export const DEFAULT_INTERNAL_IP = '192.168.127.10/24';

export function checkInternalIP(setting: string, value: string): string {
  const invalid = new Error(
    `${setting}: not an IP address with prefix length (CIDR), e.g. ${DEFAULT_INTERNAL_IP}: ${JSON.stringify(value)}`,
  );
  if (!value.includes('/')) throw invalid;
  try {
    parseCidr(value);
  } catch {
    throw invalid;
  }
  return value;
}

/** One internal IP per family, comma-separated, the primary family first: each a CIDR, no family twice. */
export function checkInternalIPs(setting: string, value: string): string[] {
  const ips = value.split(',').map((v) => checkInternalIP(setting, v.trim()));
  const families = ips.map((ip) => parseCidr(ip).family);
  if (ips.length > 2 || new Set(families).size !== families.length)
    throw new Error(`${setting}: one address per IP family, the primary family first: ${JSON.stringify(value)}`);
  return ips;
}

// the reference goes into install.env, read by systemd: one line of reference characters only
const IMAGE_REFERENCE = /^[a-z0-9][\w.\-/:@]*$/i;
// pinned by digest, as the installer requires: a tag could be moved after the factory tested the image
const BY_DIGEST = /@sha256:[0-9a-f]{64}$/;

export function checkImage(setting: string, value: string): string {
  if (!IMAGE_REFERENCE.test(value))
    throw new Error(`${setting}: not a container image reference: ${JSON.stringify(value)}`);
  if (!BY_DIGEST.test(value))
    throw new Error(`${setting}: name the image by digest (...@sha256:<64 hex digits>): ${value}`);
  return value;
}

/** The folder's revocation list of signing keys, checked as the agent reads it; none when absent. */
function revocationList(setting: string, dir: string): [string, string][] {
  let text: string;
  try {
    text = readFileSync(path.join(dir, REVOKED_KEYS_NAME), 'utf8');
  } catch {
    return [];
  }
  try {
    parseRevokedKeys(text, path.join(dir, REVOKED_KEYS_NAME));
  } catch (err) {
    throw new Error(`${setting}: ${(err as Error).message}`);
  }
  return [[REVOKED_KEYS_NAME, text]];
}

/**
 * Every *.pub of the folder, each checked to be a public key the agent will accept, and its
 * revocation list (revoked-keys) when it has one.
 */
export function readTrustAnchors(setting: string, dir: string): Record<string, string> {
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => n.endsWith('.pub'));
  } catch (err) {
    throw new Error(`${setting}: cannot read ${dir}: ${(err as Error).message}`);
  }
  if (names.length === 0) throw new Error(`${setting}: no *.pub key in ${dir}`);
  return Object.fromEntries([
    ...revocationList(setting, dir),
    ...names.map((n): [string, string] => {
      const pem = readFileSync(path.join(dir, n), 'utf8');
      try {
        readPublicKey(pem, path.join(dir, n));
      } catch (err) {
        throw new Error(`${setting}: ${(err as Error).message}`);
      }
      return [n, pem];
    }),
  ]);
}
