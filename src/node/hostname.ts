/** The node's static hostname: /etc/hostname, which systemd-hostnamed reads and writes. */
import { isDnsName } from '../config/v1/schema.js';
import type { RootFs } from '../ports/fs.js';

export const HOSTNAME_FILE = '/etc/hostname';

/** As hostnamed reads it: the first line that is neither blank nor a comment; '' when there is none. */
export async function readStaticHostname(fs: RootFs): Promise<string> {
  const text = (await fs.readText(HOSTNAME_FILE)) ?? '';
  return (
    text
      .split('\n')
      .map((l) => l.trim())
      .find((l) => l !== '' && !l.startsWith('#')) ?? ''
  );
}

/** Why a name cannot be the node's name, or undefined when it can. */
export function hostnameProblem(name: string): string | undefined {
  if (name === 'localhost' || name.startsWith('localhost.')) return 'localhost is not a usable node name';
  if (!isDnsName(name)) return 'not a valid DNS name (lowercase letters, digits, "-" and ".")';
  // the kernel keeps at most 64 characters; kubelet registers the node under this name
  if (name.length > 64) return 'longer than 64 characters';
  return undefined;
}
