import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RefusedError } from '../base/errors.js';
import { AGENT_VERSION } from '../base/version.js';
import { createRootFs } from '../ports/fs.js';
import { hashOf, STATE_FILE, STATE_VERSION, StateStore } from './state.js';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** hashOf in a fresh process whose locale is `locale`: the process locale is fixed when it starts */
function hashIn(locale: string, value: unknown): string {
  const state = fileURLToPath(new URL('./state.ts', import.meta.url));
  const script = `import(${JSON.stringify(state)}).then((m) => process.stdout.write(m.hashOf(${JSON.stringify(value)})))`;
  return execFileSync(process.execPath, ['--import', 'tsx', '-e', script], {
    encoding: 'utf8',
    env: { ...process.env, LC_ALL: locale, LANG: locale },
  });
}

describe('hashOf', () => {
  it('sorts keys by code unit, not by the rules of a language', () => {
    expect(hashOf({ b: 1, B: 2, a: { y: 1, X: 2 } })).toBe(sha256('{"B":2,"a":{"X":2,"y":1},"b":1}'));
  });

  it('hashes alike in a Danish locale, where "aa" sorts after "z", and in the C locale', () => {
    const value = { z: 1, aa: 2 };
    expect(hashIn('da_DK.UTF-8', value)).toBe(sha256('{"aa":2,"z":1}'));
    expect(hashIn('C', value)).toBe(sha256('{"aa":2,"z":1}'));
  });
});

/** A state file as each format version wrote it: the run of store-0042 failed at its second step. */
const STATE_AT: Record<number, Record<string, unknown>> = {
  1: {
    version: 1,
    site: 'store-0042',
    configHash: 'c0ffee',
    result: 'failed',
    startedAt: '2026-11-20T10:00:00.000Z',
    finishedAt: '2026-11-20T10:04:00.000Z',
    message: 'network: checks failed after 90 s',
    selected: ['ssh-keys', 'network'],
    steps: {
      'ssh-keys': { status: 'done', inputHash: 'a', attempts: 1, startedAt: '2026-11-20T10:00:01.000Z' },
      network: { status: 'failed', inputHash: 'b', attempts: 2, startedAt: '2026-11-20T10:00:02.000Z' },
    },
  },
  2: {},
};
STATE_AT[2] = { ...STATE_AT[1], version: 2, agentVersion: '0.1.0' };

describe('the state file of each format version', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'state-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  const store = () => new StateStore(createRootFs('/'), dir);
  const plant = (json: unknown) => writeFileSync(path.join(dir, STATE_FILE), JSON.stringify(json));

  it('covers every version up to the current one', () => {
    expect(Object.keys(STATE_AT).map(Number)).toEqual(Array.from({ length: STATE_VERSION }, (_, i) => i + 1));
  });

  it('version 1 (no writer named) is read: which steps are done, and the writer unknown', async () => {
    plant(STATE_AT[1]);
    const state = await store().load();
    expect(state?.steps['ssh-keys']?.status).toBe('done');
    expect(state?.steps.network?.attempts).toBe(2);
    expect(state?.agentVersion).toBeUndefined();
    expect(state?.version).toBe(STATE_VERSION);
  });

  it('version 2 is read with the version of the agent that wrote it', async () => {
    plant(STATE_AT[2]);
    const state = await store().load();
    expect(state?.agentVersion).toBe('0.1.0');
    expect(state?.steps.network?.status).toBe('failed');
  });

  it('a file of version 1 saved again is of the current version and names this agent', async () => {
    plant(STATE_AT[1]);
    const s = store();
    await s.save((await s.load())!);
    const written = JSON.parse(readFileSync(path.join(dir, STATE_FILE), 'utf8'));
    expect(written).toMatchObject({ version: STATE_VERSION, agentVersion: AGENT_VERSION, site: 'store-0042' });
  });

  it('a version-2 file that names no writer is damaged, with the field named', async () => {
    plant({ ...STATE_AT[1], version: 2 });
    await expect(store().load()).rejects.toThrow(/is damaged \(\$\.agentVersion: .*Move it aside/);
  });

  it('a file of a later version is refused, naming both versions and what to do, and left as it was', async () => {
    const text = JSON.stringify({ ...STATE_AT[2], version: STATE_VERSION + 1, agentVersion: '0.9.0' });
    writeFileSync(path.join(dir, STATE_FILE), text);
    const err = await store()
      .load()
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RefusedError);
    expect((err as Error).message).toContain(
      `was written by a newer sno-relocate 0.9.0 (state version ${STATE_VERSION + 1}; ` +
        `this is sno-relocate ${AGENT_VERSION}, which reads up to version ${STATE_VERSION}); run that version`,
    );
    expect(readFileSync(path.join(dir, STATE_FILE), 'utf8')).toBe(text);
  });
});
