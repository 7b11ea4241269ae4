import { mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createRootFs } from '../ports/fs.js';
import { fileChange, lineDiff, readHostFile, type ManagedFile, writeManagedFile } from './managed-file.js';
import type { RootFs } from '../ports/fs.js';

/** The plan entry for the file as the host holds it now. */
const planFile = async (fs: RootFs, file: ManagedFile, summary: string) =>
  fileChange(await readHostFile(fs, file.path), file, summary);

describe('lineDiff', () => {
  it('shows removed and added lines in order and nothing for equal text', () => {
    expect(lineDiff('a\nb\nc\n', 'a\nB\nc\nd\n')).toEqual(['- b', '+ B', '+ d']);
    expect(lineDiff('', 'x\n')).toEqual(['+ x']);
    expect(lineDiff('same\n', 'same\n')).toEqual([]);
  });
});

describe('managed files', () => {
  it('plans a missing file, then a changed mode and content, then nothing once written', async () => {
    const fs = createRootFs(mkdtempSync(path.join(tmpdir(), 'managed-')));
    const file = { path: '/etc/x/y.conf', content: 'a=1\n', mode: 0o644 };
    expect(await planFile(fs, file, 'the y config')).toEqual({
      action: 'create',
      target: '/etc/x/y.conf',
      summary: 'the y config (mode 0644)',
      diff: ['+ a=1'],
    });
    await fs.writeAtomic(file.path, 'a=2\n', { mode: 0o600 });
    expect(await planFile(fs, file, 'the y config')).toEqual({
      action: 'update',
      target: '/etc/x/y.conf',
      summary: 'the y config (content differs; mode 0600, want 0644)',
      diff: ['- a=2', '+ a=1'],
    });
    await writeManagedFile(fs, file);
    expect(statSync(fs.resolve(file.path)).mode & 0o777).toBe(0o644);
    expect(await planFile(fs, file, 'the y config')).toBeUndefined();
  });

  it('names a secret file without showing its lines', async () => {
    const fs = createRootFs(mkdtempSync(path.join(tmpdir(), 'managed-')));
    const change = await planFile(fs, { path: '/s', content: 'token\n', mode: 0o600, showDiff: false }, 'credentials');
    expect(change).toEqual({ action: 'create', target: '/s', summary: 'credentials (mode 0600)' });
  });
});
