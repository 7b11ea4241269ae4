/**
 * README.md is the front door and docs/ holds the rest: their generated parts are current, every
 * link leads to a file (and heading) that exists, and the README stays short.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { blocksIn, documents, GENERATED, refreshed } from '../../scripts/readme-reference.js';
import { parseCommandLine } from '../../src/cli/args.js';
import { REPO } from '../helpers/cli.js';

const files = documents();
const text = new Map(files.map((f) => [f, readFileSync(f, 'utf8')]));
const README = path.join(REPO, 'README.md');
const readme = text.get(README)!;

/** GitHub's anchor for a heading: lower case, punctuation but hyphens dropped, spaces as hyphens */
const slug = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');

/** the anchors of a Markdown file's headings, outside fenced blocks */
function anchorsOf(file: string): Set<string> {
  const lines = readFileSync(file, 'utf8').split('\n');
  let fenced = false;
  const out = new Set<string>();
  for (const line of lines) {
    if (line.startsWith('```')) fenced = !fenced;
    const m = !fenced && /^#{1,6} (.*)$/.exec(line);
    if (m) out.add(slug(m[1]!));
  }
  return out;
}

describe('README and docs/', () => {
  it.each(files.map((f) => [path.relative(REPO, f)]))(
    '%s carries its generated parts as they are now (npx tsx scripts/readme-reference.ts)',
    (file) => {
      const doc = text.get(path.join(REPO, file))!;
      expect(doc).toBe(refreshed(doc));
    },
  );

  it('holds every generated part in exactly one document', () => {
    for (const name of Object.keys(GENERATED))
      expect(
        files.filter((f) => blocksIn(text.get(f)!).includes(name)).map((f) => path.relative(REPO, f)),
        name,
      ).toHaveLength(1);
  });

  it.each(files.map((f) => [path.relative(REPO, f)]))('%s links only to files and headings that exist', (file) => {
    const from = path.join(REPO, file);
    const links = [...text.get(from)!.matchAll(/\]\(([^)\s:]+)\)/g)].map((m) => m[1]!);
    for (const link of links) {
      const [target, anchor] = link.split('#') as [string, string | undefined];
      const resolved = target ? path.resolve(path.dirname(from), target) : from;
      expect(existsSync(resolved), link).toBe(true);
      if (anchor !== undefined) expect(anchorsOf(resolved), `${file}: ${link}`).toContain(anchor);
    }
  });

  it('shows sno-relocate only with options its commands take', () => {
    const shown = files.flatMap((f) =>
      [...text.get(f)!.matchAll(/```(?:sh|text)\n([\s\S]*?)```/g)]
        .flatMap((m) => m[1]!.replace(/\\\n\s*/g, ' ').split('\n'))
        .map((line) => line.replace(/^\$ /, '').replace(/\s+#.*$/, ''))
        .filter((line) => line.startsWith('sno-relocate ') && !line.includes('$('))
        .map((line) => [path.relative(REPO, f), line] as const),
    );
    expect(shown.length).toBeGreaterThan(20);
    for (const [file, line] of shown)
      expect(() => parseCommandLine(line.split(/\s+/).slice(1)), `${file}: ${line}`).not.toThrow();
  });

  it('README names the two set-up commands the package defines', () => {
    const scripts = (
      JSON.parse(readFileSync(path.join(REPO, 'package.json'), 'utf8')) as { scripts: Record<string, string> }
    ).scripts;
    for (const command of [...readme.matchAll(/npm run ([\w:-]+)/g)].map((m) => m[1]!))
      expect(scripts, command).toHaveProperty(command);
    expect(readme).toContain('npm test');
  });

  it('README is a front door: under 300 lines, linking every document under docs/', () => {
    expect(readme.split('\n').length).toBeLessThan(300);
    for (const doc of files.filter((f) => f !== README)) expect(readme).toContain(`](${path.relative(REPO, doc)})`);
  });
});
