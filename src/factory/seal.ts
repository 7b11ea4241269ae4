/**
 * `factory seal`: the node's shipping state, once `factory check` found it fit. The state folder
 * is cleared of the factory run (its state, the watcher's files, the kubelet gate's marker, so the
 * gate is closed for the next boot: kubelet waits for the site's node steps), and the shipment time
 * is recorded there for `status`.
 */
import path from 'node:path';
import { GATE_FILE, gatePath } from '../node/kubelet-gate.js';
import type { RootFs } from '../ports/fs.js';
import { LOCK_FILE } from '../ports/run-lock.js';
import { SHIPMENT_FILE, type Shipment } from '../node/shipment.js';

export async function sealNode(fs: RootFs, stateDir: string, shipment: Shipment): Promise<string[]> {
  // the gate first: a power cut from here on boots with kubelet held
  const gate = (await fs.exists(gatePath(stateDir))) ? [GATE_FILE] : [];
  await fs.remove(gatePath(stateDir));
  let entries: string[] = [];
  try {
    entries = await fs.list(stateDir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  // the run lock seal holds goes when it releases it
  entries = entries.filter((entry) => entry !== LOCK_FILE);
  for (const entry of entries) await fs.remove(path.posix.join(stateDir, entry));
  await fs.mkdirp(stateDir, 0o700);
  await fs.writeAtomic(path.posix.join(stateDir, SHIPMENT_FILE), `${JSON.stringify(shipment, null, 2)}\n`, {
    mode: 0o644,
  });
  await fs.syncDir(stateDir);
  return [...gate, ...entries].sort();
}
