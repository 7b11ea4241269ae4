/**
 * The source tree carries no dead exports and no re-export shims: every name a module of src/
 * exports is used somewhere (another module, a test, a script, or the module itself), and a module
 * exports only what it defines, so each name has one home to import it from.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { REPO } from '../helpers/cli.js';

const files = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '*.ts'], {
  cwd: REPO,
  encoding: 'utf8',
})
  .split('\n')
  .filter((f) => /^(src|test|scripts|bench)\//.test(f));
const text = new Map(files.map((f) => [f, readFileSync(path.join(REPO, f), 'utf8')]));
const modules = files.filter((f) => f.startsWith('src/') && !f.endsWith('.test.ts'));

const DECLARED =
  /^export (?:declare )?(?:async )?(?:abstract )?(?:function\*?|const|let|class|interface|type|enum) (\w+)/gm;

describe('exports of src/', () => {
  it('are each used somewhere: no dead code', () => {
    const unused = modules.flatMap((file) =>
      [...text.get(file)!.matchAll(DECLARED)]
        .map((m) => m[1]!)
        .filter((name) => {
          const word = new RegExp(`\\b${name}\\b`, 'g');
          const inOwn = text.get(file)!.match(word)?.length ?? 0;
          return inOwn <= 1 && !files.some((other) => other !== file && word.test(text.get(other)!));
        })
        .map((name) => `${file}: ${name}`),
    );
    expect(unused).toEqual([]);
  });

  it('are defined where they are exported: no re-export shims', () => {
    const shims = modules.filter((file) => /^export (?:type )?(?:\*|\{[^}]*\})(?: from |;)/m.test(text.get(file)!));
    expect(shims).toEqual([]);
  });
});
