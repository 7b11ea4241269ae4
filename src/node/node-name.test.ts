import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createRootFs } from '../ports/fs.js';
import { KUBELET_ENV_FILE, registeredNodeName } from './node-name.js';

function root(files: Record<string, string>): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'node-name-'));
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    writeFileSync(path.join(dir, file), text);
  }
  return dir;
}

describe('registeredNodeName', () => {
  it.each<[string, Record<string, string>, string]>([
    [
      'the name node-name pinned',
      { [KUBELET_ENV_FILE]: 'KUBELET_NODE_NAME=sno-factory\n', '/etc/hostname': 'store-0042\n' },
      'sno-factory',
    ],
    ['without a pin, the static hostname in lower case', { '/etc/hostname': 'SNO-Factory\n' }, 'sno-factory'],
  ])('%s', async (_, files, name) => {
    expect(await registeredNodeName(createRootFs(root(files)))).toBe(name);
  });

  it('refuses to guess when neither is there, naming both places', async () => {
    await expect(registeredNodeName(createRootFs(root({})))).rejects.toThrow(
      /node's name is unknown: no KUBELET_NODE_NAME in \/etc\/kubernetes\/kubelet-env and no static hostname/,
    );
  });
});
