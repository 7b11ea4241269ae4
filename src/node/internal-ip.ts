/**
 * The internal node IP: a fixed address on br-ex that kubelet and CRI-O are pinned to, so the node
 * keeps its identity (serving certificates, etcd member URL, node object) on whatever network a
 * site gives it. Pure renderers of the three files that hold it in place, shared by the
 * internal-ip step and the factory MachineConfig renderer.
 */
import { formatCidr, parseCidr } from '../base/addresses.js';

export const BR_EX = 'br-ex';
/** NetworkManager runs every executable here on device events, with the interface and the action */
export const DISPATCHER_SCRIPT = '/etc/NetworkManager/dispatcher.d/30-sno-relocate-internal-ip';
export const KUBELET_NODE_IP_DROP_IN = '/etc/systemd/system/kubelet.service.d/30-sno-relocate-node-ip.conf';
/**
 * A crio.service drop-in, not a file in /etc/crio/crio.conf.d: OpenShift's nodeip-configuration
 * writes CONTAINER_STREAM_ADDRESS into crio.service.d/20-nodenet.conf, and CRI-O lets that
 * environment variable override its configuration files. Sorting after 20-nodenet.conf, this
 * drop-in's value is the one systemd passes.
 */
export const CRIO_NODE_IP_DROP_IN = '/etc/systemd/system/crio.service.d/30-sno-relocate-node-ip.conf';

const HEADER = '# Installed by sno-relocate; it is rewritten when it differs from the site-config.';

function checked(internalIP: string): { cidr: string; address: string; family: 4 | 6 } {
  const invalid = new Error(`internal IP: not an IP address with prefix length (CIDR): ${JSON.stringify(internalIP)}`);
  if (!internalIP.includes('/')) throw invalid;
  try {
    const parsed = parseCidr(internalIP);
    return { cidr: formatCidr(parsed), address: parsed.ip, family: parsed.family };
  } catch {
    throw invalid;
  }
}

/** One internal IP, or one per family with the cluster's primary family first. */
export type InternalIPs = string | readonly string[];

function checkedAll(internalIPs: InternalIPs): ReturnType<typeof checked>[] {
  const all = (typeof internalIPs === 'string' ? [internalIPs] : internalIPs).map(checked);
  if (all.length === 0 || all.length > 2 || (all.length === 2 && all[0]!.family === all[1]!.family))
    throw new Error(`internal IP: one address, or one per IP family: ${JSON.stringify(internalIPs)}`);
  return all;
}

/** The script's lines that keep one address first of its family on br-ex; `exit 0` ends them early. */
function keepFirstLines(cidr: string, family: 4 | 6): string {
  const nodad = family === 6 ? ' nodad' : '';
  return `ip() { /usr/sbin/ip -${family} "$@"; }
ip addr replace ${cidr} dev ${BR_EX}${nodad} || exit 1
# the primary addresses ahead of it, with their flags and lifetimes
ahead=$(ip -o addr show dev ${BR_EX} scope global | while read -r _ _ _ addr rest; do
  [ "$addr" = "${cidr}" ] && break
  case " $rest " in *" secondary "*|*" deprecated "*) continue ;; esac
  echo "$addr $rest"
done)
[ -n "$ahead" ] || exit 0
routes=$(ip route show dev ${BR_EX} | grep -v ' proto kernel ')
echo "$ahead" | while read -r addr rest; do
  opts=""
  set -- $rest
  while [ $# -gt 0 ]; do
    case "$1" in
      valid_lft|preferred_lft) [ "$2" = forever ] || opts="$opts $1 \${2%sec}"; shift ;;
      noprefixroute) opts="$opts noprefixroute" ;;
    esac
    shift
  done
  ip addr del "$addr" dev ${BR_EX} && ip addr add "$addr" dev ${BR_EX} $opts${nodad}
done
echo "$routes" | while read -r route; do
  [ -z "$route" ] || ip route replace $(echo "$route" | sed 's/ linkdown//; s/ offload//') dev ${BR_EX}
done
exit 0
`;
}

const indent = (text: string) => text.replace(/^(?=.)/gm, '  ');

/**
 * The dispatcher script: NetworkManager may re-create br-ex (ovs-configuration does at every boot)
 * and re-applying a profile drops addresses it does not own, so the address is put back on every
 * event that (re)configures br-ex; `ip addr replace` makes a repeat harmless. It must also be the
 * first address of its family: OVN-Kubernetes takes br-ex's first primary address of each family
 * in netlink order as the node IP, and the kernel appends a new address behind those already there.
 * So every primary address ahead of it (the site's) is deleted and added again behind it, with its
 * lifetimes, and the routes through br-ex that the deletion took along are put back. Dual-stack,
 * the same is done for each family in a subshell of its own (`ip -4`, then `ip -6`); a single
 * address keeps the script the factory MachineConfigs of earlier releases carry, byte for byte.
 * The internal-ip step runs this script too, so the order has one implementation.
 */
export function renderDispatcherScript(internalIPs: InternalIPs): string {
  const all = checkedAll(internalIPs);
  const head = `#!/bin/sh
${HEADER}
`;
  const events = `# NetworkManager calls this with the interface and the action, e.g. "${BR_EX} up".
[ "$1" = "${BR_EX}" ] || exit 0
case "$2" in
  up|reapply|dhcp4-change|dhcp6-change) ;;
  *) exit 0 ;;
esac
`;
  if (all.length === 1) {
    const { cidr, family } = all[0]!;
    return `${head}# Keeps the internal node IP ${cidr} on ${BR_EX}, as its first address: kubelet and CRI-O are
# pinned to it, and OVN-Kubernetes takes the first address of ${BR_EX} as the node IP.
${events}${keepFirstLines(cidr, family)}`;
  }
  const cidrs = all.map((a) => a.cidr).join(' and ');
  const blocks = all.map(
    ({ cidr, family }) => `keep_first_ipv${family}() (
${indent(keepFirstLines(cidr, family))})
`,
  );
  return `${head}# Keeps the internal node IPs ${cidrs} on ${BR_EX},
# each as the first address of its family: kubelet and CRI-O are pinned to them, and OVN-Kubernetes takes the first address of each family
# of ${BR_EX} as the node IPs.
${events}${blocks.join('')}${all
    .map(
      ({ family }) => `keep_first_ipv${family} || exit 1
`,
    )
    .join('')}exit 0
`;
}

/** The internal IPs a script of renderDispatcherScript() keeps on br-ex, in its order; empty for any other script. */
export function pinnedInternalIPs(script: string): string[] {
  if (!script.includes(HEADER)) return [];
  return [...script.matchAll(new RegExp(`^\\s*ip addr replace (\\S+) dev ${BR_EX}`, 'gm'))].map((m) => m[1]!);
}

/**
 * Later drop-ins win: this overrides the node IPs that nodeip-configuration picks (20-nodenet.conf).
 * KUBELET_NODE_IPS lists every family, comma-separated as nodeip-configuration writes it, the
 * primary first: kubelet's --node-ip takes that order as the node's, and it must match the cluster's.
 */
export function renderKubeletNodeIpDropIn(internalIPs: InternalIPs): string {
  const all = checkedAll(internalIPs);
  return `${HEADER}
# Pins the node IP${all.length > 1 ? 's' : ''} to the internal address${all.length > 1 ? 'es' : ''} on ${BR_EX}.
[Service]
Environment="KUBELET_NODE_IP=${all[0]!.address}" "KUBELET_NODE_IPS=${all.map((a) => a.address).join(',')}"
`;
}

/** CRI-O serves its streams on one address: the primary family's. */
export function renderCrioNodeIpDropIn(internalIPs: InternalIPs): string {
  const { address } = checkedAll(internalIPs)[0]!;
  return `${HEADER}
# Serves CRI-O's exec/attach/port-forward streams on the internal address on ${BR_EX}.
[Service]
Environment="CONTAINER_STREAM_ADDRESS=${address}"
`;
}

export interface NodeFile {
  path: string;
  content: string;
  mode: number;
  /** one line on what the file is for */
  purpose: string;
}

/** Every file that pins the internal IP, with its mode. */
export function nodeIpFiles(internalIP: InternalIPs): NodeFile[] {
  return [
    {
      path: DISPATCHER_SCRIPT,
      content: renderDispatcherScript(internalIP),
      mode: 0o755,
      purpose: `NetworkManager dispatcher script that keeps the address on ${BR_EX}`,
    },
    {
      path: KUBELET_NODE_IP_DROP_IN,
      content: renderKubeletNodeIpDropIn(internalIP),
      mode: 0o644,
      purpose: 'kubelet drop-in pinning the node IP',
    },
    {
      path: CRIO_NODE_IP_DROP_IN,
      content: renderCrioNodeIpDropIn(internalIP),
      mode: 0o644,
      purpose: 'CRI-O drop-in pinning the stream address',
    },
  ];
}
