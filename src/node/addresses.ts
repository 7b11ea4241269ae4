/** The live addresses of an interface, read and set with iproute2's `ip`. */
import { formatCidr, parseCidr } from '../base/addresses.js';
import { CommandError } from '../base/errors.js';
import type { Exec } from '../ports/exec.js';

interface IpAddrJson {
  addr_info?: { local?: string; prefixlen?: number }[];
}

/** The addresses on an interface as canonical CIDRs, or undefined when the interface does not exist. */
export async function interfaceAddresses(exec: Exec, dev: string): Promise<string[] | undefined> {
  const result = await exec.run('ip', ['-j', 'addr', 'show', 'dev', dev], { allowFailure: true });
  if (result.code !== 0) {
    if (/does not exist|Cannot find device/i.test(result.stderr)) return undefined;
    throw new CommandError(
      `ip addr show dev ${dev} failed (exit ${result.code}): ${result.stderr.trim()}`,
      `ip -j addr show dev ${dev}`,
      result.code,
      result.stderr,
      { retryable: true },
    );
  }
  const links = JSON.parse(result.stdout || '[]') as IpAddrJson[];
  return links.flatMap((link) =>
    (link.addr_info ?? []).flatMap((a) =>
      a.local !== undefined && a.prefixlen !== undefined ? [formatCidr(parseCidr(`${a.local}/${a.prefixlen}`))] : [],
    ),
  );
}

/** `ip addr replace`: adds the address, and succeeds when it is already there. */
export async function ensureAddress(exec: Exec, cidr: string, dev: string): Promise<void> {
  const c = parseCidr(cidr);
  // no duplicate address detection: kubelet binds to it at once and a tentative address refuses that
  await exec.run('ip', [
    `-${c.family}`,
    'addr',
    'replace',
    formatCidr(c),
    'dev',
    dev,
    ...(c.family === 6 ? ['nodad'] : []),
  ]);
}
