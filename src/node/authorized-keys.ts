/**
 * authorized_keys with a block the agent owns: the site-config's keys live between two marker
 * lines; every other line (factory keys, keys added by hand) is kept as it is. A key already present
 * outside the block is not repeated inside it.
 */
import { createHash } from 'node:crypto';

export const BLOCK_BEGIN = '# BEGIN sno-relocate: keys from the site-config; this block is rewritten on every run';
export const BLOCK_END = '# END sno-relocate';

const KEY_TYPE =
  /^(ssh-(rsa|ed25519|dss)|ecdsa-sha2-nistp(256|384|521)|sk-(ssh-ed25519|ecdsa-sha2-nistp256)@openssh\.com)$/;

export interface PublicKey {
  type: string;
  /** base64 key blob */
  blob: string;
  comment: string;
}

/**
 * The key on an authorized_keys line, past any options (`from="..."`, `command="..."`);
 * undefined for comments and blanks.
 */
export function parseKeyLine(line: string): PublicKey | undefined {
  const trimmed = line.trim();
  if (trimmed === '' || trimmed.startsWith('#')) return undefined;
  const tokens = trimmed.split(/\s+/);
  const at = tokens.findIndex((t) => KEY_TYPE.test(t));
  if (at < 0 || tokens[at + 1] === undefined) return undefined;
  return { type: tokens[at]!, blob: tokens[at + 1]!, comment: tokens.slice(at + 2).join(' ') };
}

/** As `ssh-keygen -l` prints it: SHA256 of the blob, base64 without padding. */
export function fingerprint(key: PublicKey): string {
  return `SHA256:${createHash('sha256').update(Buffer.from(key.blob, 'base64')).digest('base64').replace(/=+$/, '')}`;
}

export const describeKey = (key: PublicKey): string =>
  `${key.type} ${fingerprint(key)}${key.comment ? ` ${key.comment}` : ''}`;

const identity = (key: PublicKey) => `${key.type} ${key.blob}`;

/** Splits a file into the lines outside the block and the lines inside it (markers dropped). */
export function splitManagedBlock(text: string): { outside: string[]; managed: string[] } {
  const lines = text === '' ? [] : text.replace(/\n$/, '').split('\n');
  const begin = lines.indexOf(BLOCK_BEGIN);
  if (begin < 0) return { outside: lines, managed: [] };
  const end = lines.indexOf(BLOCK_END, begin + 1);
  // an unterminated block runs to the end: the agent writes the block last and whole
  const stop = end < 0 ? lines.length : end;
  return { outside: [...lines.slice(0, begin), ...lines.slice(stop + 1)], managed: lines.slice(begin + 1, stop) };
}

/** The file as it should be: the other lines kept in order, then the block with the keys not already present. */
export function renderAuthorizedKeys(existing: string, keys: readonly string[]): string {
  const { outside } = splitManagedBlock(existing);
  while (outside.length > 0 && outside.at(-1)!.trim() === '') outside.pop();
  const seen = new Set(
    outside.flatMap((line) => {
      const key = parseKeyLine(line);
      return key ? [identity(key)] : [];
    }),
  );
  const ours: string[] = [];
  for (const line of keys) {
    const key = parseKeyLine(line);
    if (!key || seen.has(identity(key))) continue;
    seen.add(identity(key));
    ours.push(line.trim());
  }
  const lines = ours.length > 0 ? [...outside, BLOCK_BEGIN, ...ours, BLOCK_END] : outside;
  return lines.length > 0 ? `${lines.join('\n')}\n` : '';
}

export interface PasswdEntry {
  uid: number;
  gid: number;
  home: string;
}

/** A user's entry in /etc/passwd text. */
export function passwdEntry(passwd: string, user: string): PasswdEntry | undefined {
  for (const line of passwd.split('\n')) {
    const fields = line.split(':');
    if (fields[0] !== user || fields.length < 7) continue;
    const uid = Number(fields[2]);
    const gid = Number(fields[3]);
    if (!Number.isInteger(uid) || !Number.isInteger(gid) || !fields[5]) return undefined;
    return { uid, gid, home: fields[5] };
  }
  return undefined;
}
