/** The state folder's JSON reader on a real temporary folder: what a damaged file is refused with. */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { RefusedError } from '../base/errors.js';
import { createRootFs } from './fs.js';
import { readJsonFile } from './json-file.js';

const spec = {
  what: 'watcher context',
  schema: z.object({ registries: z.array(z.string()) }),
  advice: 'move it aside',
};

function rootWith(content?: string) {
  const root = mkdtempSync(path.join(tmpdir(), 'json-file-'));
  mkdirSync(path.join(root, 'var/lib/sno-relocate'), { recursive: true });
  if (content !== undefined) writeFileSync(path.join(root, 'var/lib/sno-relocate/context.json'), content);
  return { fs: createRootFs(root), host: path.join(root, 'var/lib/sno-relocate/context.json') };
}

describe('readJsonFile', () => {
  it('reads a file of the expected shape, and undefined when there is none', async () => {
    const good = rootWith('{"registries":["quay.io"]}');
    expect(await readJsonFile(good.fs, '/var/lib/sno-relocate/context.json', spec)).toEqual({
      registries: ['quay.io'],
    });
    const none = rootWith();
    expect(await readJsonFile(none.fs, '/var/lib/sno-relocate/context.json', spec)).toBeUndefined();
  });

  it.each([
    ['{"registries": [', /is damaged \(not valid JSON: .+\); move it aside$/],
    ['{"registries": ["quay.io", 5]}', /is damaged \(\$\.registries\[1\]: .*expected string.*\); move it aside$/],
  ])('refuses %j naming the file on the host and what is wrong', async (content, why) => {
    const { fs, host } = rootWith(content);
    const read = readJsonFile(fs, '/var/lib/sno-relocate/context.json', spec);
    await expect(read).rejects.toBeInstanceOf(RefusedError);
    await expect(read).rejects.toThrow(`watcher context ${host} is damaged`);
    await expect(read).rejects.toThrow(why);
  });
});
