import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { README, refreshedReadme } from '../../scripts/readme-reference.js';
import { REPO } from '../helpers/cli.js';

const text = readFileSync(README, 'utf8');

describe('README', () => {
  it('carries the current CLI usage, site-config reference, example and message ids (npx tsx scripts/readme-reference.ts)', () => {
    expect(text).toBe(refreshedReadme(text));
  });

  it('links only to files that exist', () => {
    const links = [...text.matchAll(/\]\(([^)#:]+)\)/g)].map((m) => m[1]!);
    expect(links.length).toBeGreaterThan(0);
    for (const link of links) expect(existsSync(path.join(REPO, link)), link).toBe(true);
  });

  it('names the two set-up commands the package defines', () => {
    const scripts = (
      JSON.parse(readFileSync(path.join(REPO, 'package.json'), 'utf8')) as { scripts: Record<string, string> }
    ).scripts;
    for (const command of [...text.matchAll(/npm run ([\w:-]+)/g)].map((m) => m[1]!))
      expect(scripts, command).toHaveProperty(command);
    expect(text).toContain('npm test');
  });
});
