/**
 * docs/design.md is where a maintainer starts: every file or folder it names in backticks exists,
 * its repository layout has a row for every folder under src/, and what it says of the steps'
 * rooms holds: no step imports another, and nothing a step hands on travels in module state keyed
 * on an object (a WeakMap or WeakSet in the engine or the steps), and apply and settle act on the
 * plan's decision without reading the site-config again. No source file under src/ runs
 * over 400 lines: one that does holds more than one concern, and is split along them.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { STEPS } from '../../src/steps/index.js';
import { REPO } from '../helpers/cli.js';

const doc = readFileSync(path.join(REPO, 'docs/design.md'), 'utf8');
/** the most lines a source file under src/ may have */
const MAX_LINES = 400;
/** `src/...`, `test/...` and the like; a placeholder (`<name>`) or a glob stands for any name and is not checked */
const named = [...doc.matchAll(/`((?:src|test|docs|scripts|systemd|bench|examples)\/[^`<>\s*]*)`/g)].map((m) => m[1]!);

describe('docs/design.md', () => {
  it('names only files and folders that exist', () => {
    expect(named.length).toBeGreaterThan(20);
    expect(named.filter((p) => !existsSync(path.join(REPO, p)))).toEqual([]);
  });

  it('has a row in its repository layout for every folder under src/', () => {
    const folders = readdirSync(path.join(REPO, 'src'), { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => `src/${e.name}`);
    const layout = doc.slice(doc.indexOf('## Repository layout'));
    expect(folders.filter((f) => !layout.includes(`\`${f}\``))).toEqual([]);
  });

  it('no step imports another step', () => {
    const stepFiles = new Set(STEPS.map((s) => `${s.name}.ts`));
    const imports = [...stepFiles].flatMap((file) =>
      [...readFileSync(path.join(REPO, 'src/steps', file), 'utf8').matchAll(/from '\.\/([a-z-]+\.)js'/g)]
        .map((m) => `${m[1]!}ts`)
        .filter((target) => stepFiles.has(target))
        .map((target) => `${file} -> ${target}`),
    );
    expect(imports).toEqual([]);
  });

  it('keeps no module state keyed on an object in the engine or the steps: facts travel through the engine', () => {
    const sources = ['src/engine', 'src/steps', 'src/steps/domain'].flatMap((dir) =>
      readdirSync(path.join(REPO, dir))
        .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'))
        .map((f) => `${dir}/${f}`),
    );
    expect(sources.filter((f) => /new Weak(Map|Set)\b/.test(readFileSync(path.join(REPO, f), 'utf8')))).toEqual([]);
  });

  it("acts on the plan's decision: no step's apply or settle reads the site-config to decide again", () => {
    const reading = STEPS.flatMap((s) =>
      [s.apply, s.settle]
        .filter((fn) => fn !== undefined && /\bctx\.site\b/.test(fn.toString()))
        .map((fn) => `${s.name}.${fn!.name}`),
    );
    expect(STEPS.filter((s) => s.apply).length).toBeGreaterThan(20);
    expect(reading).toEqual([]);
  });

  it('has no source file over 400 lines under src/ (tests aside)', () => {
    const sources = readdirSync(path.join(REPO, 'src'), { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'))
      .map((f) => `src/${f}`);
    const lines = (file: string) => readFileSync(path.join(REPO, file), 'utf8').split('\n').length - 1;
    expect(sources.length).toBeGreaterThan(100);
    expect(sources.filter((f) => lines(f) > MAX_LINES).map((f) => `${f}: ${lines(f)} lines`)).toEqual([]);
  });
});
