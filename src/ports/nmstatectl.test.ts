import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { testNode } from '../../test/node/context.js';
import { parseCheckpoint } from './nmstatectl.js';

describe('parseCheckpoint', () => {
  it('reads the checkpoint from nmstate 2.x logs and from nmstate 1.x output', () => {
    const v2 = [
      '[2026-01-01T00:00:00Z INFO  nmstate::query_apply::net_state] Created checkpoint /org/freedesktop/NetworkManager/Checkpoint/7',
      '[2026-01-01T00:00:02Z INFO  nmstate::query_apply::net_state] Skipping commit for checkpoint /org/freedesktop/NetworkManager/Checkpoint/7',
    ].join('\n');
    expect(parseCheckpoint(v2)).toBe('/org/freedesktop/NetworkManager/Checkpoint/7');
    expect(parseCheckpoint('---\ninterfaces: []\n/org/freedesktop/NetworkManager/Checkpoint/12\n')).toBe(
      '/org/freedesktop/NetworkManager/Checkpoint/12',
    );
    expect(parseCheckpoint('interfaces: []\n')).toBeUndefined();
  });
});

describe('the nmstatectl adapter', () => {
  it('shows, applies without commit, commits and rolls back through nmstatectl', async () => {
    const node = testNode();
    const { nmstate } = node.ctx;
    const desired = {
      interfaces: [
        { name: 'ens9', type: 'ethernet', ipv4: { enabled: true, address: [{ ip: '10.9.0.2', 'prefix-length': 24 }] } },
      ],
    };
    const { checkpoint } = await nmstate.apply(desired, { timeoutSeconds: 150 });
    expect(checkpoint).toBe('/org/freedesktop/NetworkManager/Checkpoint/1');
    expect((await nmstate.show()).interfaces!.map((i) => i.name)).toEqual(['lo', 'ens9']);
    await nmstate.rollback(checkpoint);
    expect((await nmstate.show()).interfaces!.map((i) => i.name)).toEqual(['lo']);
    await nmstate.commit((await nmstate.apply(desired, { timeoutSeconds: 150 })).checkpoint);
    await expect(nmstate.rollback('/org/freedesktop/NetworkManager/Checkpoint/2')).rejects.toThrow(
      /nmstatectl failed \(exit 1\).*not found/,
    );
    const calls = (JSON.parse(readFileSync(node.env.NMSTATECTL_STUB_STATE!, 'utf8')) as { calls: string[][] }).calls;
    expect(calls).toEqual([
      ['apply', '--no-commit', '--timeout', '150'],
      ['show', '--json'],
      ['rollback', '/org/freedesktop/NetworkManager/Checkpoint/1'],
      ['show', '--json'],
      ['apply', '--no-commit', '--timeout', '150'],
      ['commit', '/org/freedesktop/NetworkManager/Checkpoint/2'],
    ]);
  });

  it('answers a show right after another from it, and reads again after a change or half a second', async () => {
    const node = testNode();
    const { nmstate, clock } = node.ctx;
    const calls = () =>
      (JSON.parse(readFileSync(node.env.NMSTATECTL_STUB_STATE!, 'utf8')) as { calls: string[][] }).calls.map(
        (c) => c[0],
      );
    const first = await nmstate.show();
    first.interfaces!.length = 0;
    expect((await nmstate.show()).interfaces).toHaveLength(1);
    expect(calls()).toEqual(['show']);
    await clock.sleep(500);
    await nmstate.show();
    await nmstate.commit((await nmstate.apply({ interfaces: [] }, { timeoutSeconds: 60 })).checkpoint);
    await nmstate.show();
    expect(calls()).toEqual(['show', 'show', 'apply', 'commit', 'show']);
  });

  it('reports what nmstatectl refuses', async () => {
    const { ctx } = testNode({ env: { NMSTATECTL_STUB_FAIL_APPLY: 'br-ex: desired ipv4 10.0.0.2/24, current none' } });
    await expect(ctx.nmstate.apply({ interfaces: [{ name: 'lo' }] }, { timeoutSeconds: 60 })).rejects.toThrow(
      'nmstatectl failed (exit 1): NmstateError: VerificationError: br-ex: desired ipv4 10.0.0.2/24, current none',
    );
  });
});
