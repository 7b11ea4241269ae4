/**
 * What the time already proves is refused at admission, in the `run` command itself: the node's
 * console says why and no file under the root changes (no state, no kubelet gate, no step); near
 * the power-on-by date the console carries a WARN with the date and the days left.
 */
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { RefusedError } from '../../src/base/errors.js';
import { parseCommandLine } from '../../src/cli/args.js';
import { runCommand } from '../../src/cli/commands/run.js';
import { validateCommand } from '../../src/cli/commands/validate.js';
import { SHIPMENT_FILE } from '../../src/node/shipment.js';
import { layFactoryNode } from '../fixtures/factory-node.js';
import { EXAMPLE } from '../helpers/cli.js';
import { snapshotTree } from '../helpers/tree.js';

const DAY_MS = 86_400_000;
const NOW = Date.now();
const day = (offset: number) => new Date(NOW + offset * DAY_MS).toISOString();
/** the figures the agent keeps of its own runs (sli.json): counted, and no change to the host */
const hostFiles = (root: string) =>
  Object.fromEntries(Object.entries(snapshotTree(root)).filter(([f]) => f !== 'var/lib/sno-relocate/sli.json'));

/** A sealed factory node under a temporary root, its shipment record's power-on-by date as given. */
function sealedNode(powerOnBy: { date: string; expiry: string }) {
  const root = mkdtempSync(path.join(tmpdir(), 'proven-time-'));
  layFactoryNode(root);
  const stateDir = path.join(root, 'var/lib/sno-relocate');
  mkdirSync(stateDir, { recursive: true });
  writeFileSync(
    path.join(stateDir, SHIPMENT_FILE),
    JSON.stringify({
      shippedAt: day(-200),
      shelfDays: 120,
      warnings: [],
      powerOnBy: { ...powerOnBy, certificate: 'kubelet client certificate' },
    }),
  );
  return { root, console: path.join(root, '..', `${path.basename(root)}.console`) };
}

describe('the time at admission', () => {
  it('refuses a shipment past the expiry its power-on-by date guards before the first host change', async () => {
    const node = sealedNode({ date: day(-30), expiry: day(-10) });
    const before = hostFiles(node.root);
    const run = runCommand(parseCommandLine(['run', EXAMPLE, '--root', node.root, '--console', node.console]));
    await expect(run).rejects.toBeInstanceOf(RefusedError);
    await expect(run).rejects.toThrow(
      new RegExp(
        `^site-config refused: the true time is no earlier than the node's clock .*the node stayed off past its power-on-by date ${day(-30).slice(0, 10)}: kubelet client certificate expired on .*; nothing on the host was changed$`,
      ),
    );
    expect(readFileSync(node.console, 'utf8')).toMatch(/^sno-relocate: site-config refused: .*power-on-by date/m);
    expect(hostFiles(node.root)).toEqual(before);
  });

  it('warns on the console near the power-on-by date, with the date and the days left', async () => {
    const node = sealedNode({ date: day(6), expiry: day(20) });
    const result = await validateCommand(
      parseCommandLine(['validate', EXAMPLE, '--root', node.root, '--console', node.console]),
    );
    expect(result.exitCode).toBe(0);
    expect(readFileSync(node.console, 'utf8')).toContain(
      `sno-relocate: WARN power on by ${day(6).slice(0, 10)} (kubelet client certificate expires ${day(20)}): 6 day(s) left`,
    );
  });
});
