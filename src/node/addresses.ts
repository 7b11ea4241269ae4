/** The live addresses of an interface, read and set with iproute2's `ip`. */
import { formatCidr, isLinkLocal, parseCidr } from '../base/addresses.js';
import { CommandError } from '../base/errors.js';
import type { Exec } from '../ports/exec.js';

interface IpAddrJson {
  addr_info?: { family?: string; local?: string; prefixlen?: number; secondary?: boolean; deprecated?: boolean }[];
}

async function addressList(exec: Exec, dev: string): Promise<IpAddrJson[] | undefined> {
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
  return JSON.parse(result.stdout || '[]') as IpAddrJson[];
}

const cidrOf = (a: { local?: string; prefixlen?: number }) => formatCidr(parseCidr(`${a.local}/${a.prefixlen}`));

/** The addresses on an interface as canonical CIDRs, or undefined when the interface does not exist. */
export async function interfaceAddresses(exec: Exec, dev: string): Promise<string[] | undefined> {
  const links = await addressList(exec, dev);
  if (links === undefined) return undefined;
  return links.flatMap((link) =>
    (link.addr_info ?? []).flatMap((a) => (a.local !== undefined && a.prefixlen !== undefined ? [cidrOf(a)] : [])),
  );
}

/**
 * The address OVN-Kubernetes takes as the node IP of this family: the first in netlink order that
 * is neither secondary, deprecated nor link-local (ovn-kubernetes go-controller/pkg/util/net_linux.go
 * GetFilteredInterfaceAddrs, pkg/node/util/util.go GetNetworkInterfaceIPAddresses). Undefined
 * when the interface does not exist or has none.
 */
export async function firstNodeAddress(exec: Exec, dev: string, family: 4 | 6): Promise<string | undefined> {
  const links = await addressList(exec, dev);
  const candidate = (links ?? [])
    .flatMap((l) => l.addr_info ?? [])
    .find(
      (a) =>
        a.family === (family === 4 ? 'inet' : 'inet6') &&
        a.local !== undefined &&
        a.prefixlen !== undefined &&
        !a.secondary &&
        !a.deprecated &&
        !a.local.startsWith('169.254.') &&
        !isLinkLocal(a.local),
    );
  return candidate ? cidrOf(candidate) : undefined;
}
