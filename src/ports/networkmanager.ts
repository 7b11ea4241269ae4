/**
 * The Nmstate port through NetworkManager's own D-Bus API, for nodes without nmstatectl (it is not
 * packaged for Debian). The same contract as the nmstatectl adapter:
 *   apply  = CheckpointCreate (NetworkManager rolls back by itself when the timeout passes), then
 *            each profile added or updated (persistently, as keyfiles) and activated, waiting for
 *            all activations; a failure rolls the checkpoint back at once, as nmstatectl does;
 *   commit = CheckpointDestroy; rollback = CheckpointRollback;
 *   show   = devices, their IP configuration, their applied profiles and the DNS manager, as nmstate.
 * Only the interfaces the desired state names are touched. An interface's profile is the one active
 * on its device, else the one bound to its name; further profiles bound to its name are deleted so
 * that the next boot cannot pick a stale one.
 */
import type { NmstateState } from '../base/nmstate.js';
import type { Logger } from '../log/logger.js';
import {
  CONNECTION,
  DEVICE,
  DEVICE_ACTIVATED,
  type Device,
  NetworkManagerBus,
  NM,
  NM_PATH,
  type SavedProfile,
  SETTINGS,
  SETTINGS_PATH,
} from './nm/dbus.js';
import { stateFromDevices } from './nm/current-state.js';
import type { TranslationOptions } from './nm/br-ex-bridge.js';
import { unsupportedThroughDbus } from './nm/dbus-limits.js';
import { absentRoutes, mergeSettings, sameType, withoutAutoconnect, withoutRoutes } from './nm/profile-updates.js';
import { profilesFor } from './nm/profiles.js';
import type { Nmstate } from './nmstate.js';

/** NM_CHECKPOINT_CREATE_FLAG_DESTROY_ALL | DELETE_NEW_CONNECTIONS | DISCONNECT_NEW_DEVICES */
export const CHECKPOINT_FLAGS = 0x01 | 0x02 | 0x04;
/** NM_SETTINGS_ADD_CONNECTION2_FLAG_TO_DISK | BLOCK_AUTOCONNECT, the same bits for Update2 */
export const SAVE_WITHOUT_AUTOCONNECT = 0x01 | 0x20;
/** bonds and DHCP can take a while; the checkpoint protects the node meanwhile */
const ACTIVATION_TIMEOUT_MS = 90_000;

export interface NetworkManagerOptions extends TranslationOptions {
  /** bound on waiting for each profile to be activated */
  activationTimeoutMs?: number;
}

export interface NetworkManagerNmstate extends Nmstate {
  /** drops the bus connection, if one was made */
  close(): void;
}

/** the profiles that belong to an interface: the one active on its device first, then those bound to its name */
function profilesOf(name: string, all: SavedProfile[], device: Device | undefined): SavedProfile[] {
  const bound = all.filter((p) => p.settings.connection?.['interface-name']?.value === name);
  const active = all.find((p) => p.path === device?.activeProfile);
  return active ? [active, ...bound.filter((p) => p !== active)] : bound;
}

/** The adapter; it connects to the system bus on first use. */
export function createNetworkManager(log: Logger, options: NetworkManagerOptions = {}): NetworkManagerNmstate {
  const nm = new NetworkManagerBus(log, options.activationTimeoutMs ?? ACTIVATION_TIMEOUT_MS);
  const method = nm.method.bind(nm);

  const applyProfiles = async (
    plan: ReturnType<typeof profilesFor>,
    checkpoint: string,
    state: NmstateState,
  ): Promise<void> => {
    const existing = await nm.profiles();
    const byName = new Map((await nm.devices()).map((d) => [d.data.name, d]));

    for (const name of [...plan.absent, ...plan.down]) {
      const device = byName.get(name);
      const own = profilesOf(name, existing, device);
      if (device && device.data.state === DEVICE_ACTIVATED) await method(device.path, DEVICE, 'Disconnect');
      if (plan.absent.includes(name)) {
        for (const p of own) await method(p.path, CONNECTION, 'Delete');
        log.info({ iface: name, checkpoint, removed: own.length }, `deleted the NetworkManager profiles of ${name}`);
      } else {
        // kept, but no longer brought up at boot: down is to stay down
        for (const p of own)
          await method(p.path, CONNECTION, 'Update2', withoutAutoconnect(p.settings), SAVE_WITHOUT_AUTOCONNECT, {});
        log.info(
          { iface: name, checkpoint, profiles: own.length },
          `took ${name} down; its profiles no longer autoconnect`,
        );
      }
    }

    const activations: { name: string; active: string }[] = [];
    for (const profile of plan.profiles) {
      const candidates = profilesOf(profile.name, existing, byName.get(profile.name));
      // one of another type (br-ex an OVS interface before, a Linux bridge now) is replaced, not updated
      const first = candidates.find((p) => sameType(p.settings, profile.settings));
      const others = candidates.filter((p) => p !== first);
      for (const other of others) await method(other.path, CONNECTION, 'Delete');
      // saved to disk, and not auto-activated in between: the activation below would cut that one short
      let path: string;
      if (first) {
        await method(
          first.path,
          CONNECTION,
          'Update2',
          mergeSettings(first.settings, profile.settings),
          SAVE_WITHOUT_AUTOCONNECT,
          {},
        );
        path = first.path;
      } else {
        [path] = await method<[string, unknown]>(
          SETTINGS_PATH,
          SETTINGS,
          'AddConnection2',
          profile.settings,
          SAVE_WITHOUT_AUTOCONNECT,
          {},
        );
      }
      log.info(
        { iface: profile.name, profile: path, updated: Boolean(first), removed: others.length },
        `${first ? 'updated' : 'added'} the NetworkManager profile for ${profile.name}`,
      );
      // controllers first, then their ports, then the rest; NetworkManager holds each until what it depends on is up
      activations.push({
        name: profile.name,
        active: await method<string>(NM_PATH, NM, 'ActivateConnection', path, '/', '/'),
      });
    }
    // routes removed from interfaces the state does not list: their own profiles, less those routes
    // (a listed interface's profile was made from the state, without them)
    const absent = absentRoutes(state);
    const listed = new Set((state.interfaces ?? []).map((i) => i.name));
    for (const [name, device] of absent.length ? byName : []) {
      const profile = existing.find((p) => p.path === device.activeProfile);
      const updated = !listed.has(name) && profile && withoutRoutes(profile.settings, name, absent);
      if (!updated) continue;
      await method(profile.path, CONNECTION, 'Update2', updated, SAVE_WITHOUT_AUTOCONNECT, {});
      // reapplied, not activated again: a bridge would drop its ports meanwhile, a DHCP client its lease
      await method(device.path, DEVICE, 'Reapply', {}, 0n, 0);
      log.info({ iface: name, profile: profile.path }, `removed routes from the NetworkManager profile of ${name}`);
    }
    // every outcome, in activation order: a failed controller fails its ports too, and the cause comes first
    const outcomes = await Promise.allSettled(activations.map((a) => nm.waitActivated(a.active, a.name)));
    const failed = outcomes.flatMap((o) =>
      o.status === 'rejected' ? [o.reason instanceof Error ? o.reason.message : String(o.reason)] : [],
    );
    if (failed.length) throw new Error(failed.join('; '));
  };

  return {
    async show() {
      return stateFromDevices(
        (await nm.devices()).map((d) => d.data),
        await nm.runningDns(),
        options,
      );
    },

    unsupported: (state) => unsupportedThroughDbus(state, options),

    async apply(state: NmstateState, { timeoutSeconds }) {
      // before anything changes: an unsupported state is refused, not half applied
      const plan = profilesFor(state, options);
      const checkpoint = await method<string>(NM_PATH, NM, 'CheckpointCreate', [], timeoutSeconds, CHECKPOINT_FLAGS);
      log.info(
        { checkpoint, timeoutSeconds },
        `NetworkManager checkpoint ${checkpoint} created; it rolls back by itself after ${timeoutSeconds} s`,
      );
      try {
        await applyProfiles(plan, checkpoint, state);
      } catch (err) {
        // undone now rather than at the timeout, so that the node is back on its network at once
        const reason = err instanceof Error ? err.message : String(err);
        let undone = 'the change was rolled back';
        try {
          await nm.rollback(checkpoint);
        } catch (rollbackErr) {
          undone = `the rollback failed too (${rollbackErr instanceof Error ? rollbackErr.message : String(rollbackErr)}); NetworkManager rolls back by itself after ${timeoutSeconds} s`;
        }
        throw new Error(`${reason}; ${undone}`, { cause: err });
      }
      return { checkpoint };
    },

    async commit(checkpoint) {
      await method(NM_PATH, NM, 'CheckpointDestroy', checkpoint);
    },

    async rollback(checkpoint) {
      await nm.rollback(checkpoint);
    },

    close() {
      nm.close();
    },
  };
}
