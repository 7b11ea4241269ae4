/**
 * br-ex without Open vSwitch: on a node that has none, an OVS br-ex in the desired state (the
 * ovs-bridge and its ovs-interface) is made as a Linux bridge of that name with the OVS bridge's
 * ports, and the current state shows a Linux bridge br-ex also as OVS.
 */
import type { NmstateState } from '../../base/nmstate.js';
import type { Interface } from './encoding.js';

/** the switch that sets TranslationOptions.brExAsLinuxBridge on a node */
export const BR_EX_AS_LINUX_BRIDGE_ENV = 'SNO_RELOCATE_BR_EX_AS_LINUX_BRIDGE';

export interface TranslationOptions {
  /** make an OVS br-ex a Linux bridge, and show a Linux bridge br-ex also as OVS (nodes without Open vSwitch) */
  brExAsLinuxBridge?: boolean;
}
export const BR_EX = 'br-ex';
export type BridgePorts = { bridge?: { port?: { name: string }[] } };
const isOvs = (iface: Interface) => iface.type?.startsWith('ovs-') === true;

/**
 * The desired state with an OVS br-ex as a Linux bridge: the ovs-interface gives the IP settings,
 * the ovs-bridge its ports (without br-ex itself, OVS's internal port). A state that lists no OVS
 * bridge leaves the ports the bridge already has.
 */
export function brExAsLinuxBridge(state: NmstateState): NmstateState {
  const interfaces = state.interfaces ?? [];
  const ovs = interfaces.filter((i) => i.name === BR_EX && isOvs(i));
  if (ovs.length === 0) return state;
  const carrier = ovs.find((i) => i.type === 'ovs-interface') ?? ovs[0]!;
  const ovsBridge = ovs.find((i) => i.type === 'ovs-bridge') as BridgePorts | undefined;
  const ports = ovsBridge?.bridge?.port?.filter((p) => p.name !== BR_EX).map((p) => ({ name: p.name }));
  const { bridge: _ovsOptions, ...rest } = carrier as Interface & BridgePorts;
  const linux = {
    ...rest,
    type: 'linux-bridge',
    bridge: { options: { stp: { enabled: false } }, ...(ports ? { port: ports } : {}) },
  } as Interface;
  return { ...state, interfaces: interfaces.flatMap((i) => (i === ovs[0] ? [linux] : ovs.includes(i) ? [] : [i])) };
}
