/**
 * `npm run demo`: validates the bundled example site-config and prints the full plan that
 * `run` would carry out on a factory-fresh node, laid out in a temporary root. Nothing on this
 * machine changes.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { layFactoryNode } from '../test/fixtures/factory-node.js';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const example = path.join(repo, 'examples', 'store-0042');
const root = mkdtempSync(path.join(tmpdir(), 'sno-relocate-demo-'));
try {
  layFactoryNode(root);
  const cli = (...args: string[]) =>
    spawnSync(process.execPath, ['--import', 'tsx', path.join(repo, 'src/cli/main.ts'), ...args], { stdio: 'inherit' }).status ?? 1;
  console.log(`$ sno-relocate validate ${path.relative(repo, example)}`);
  let code = cli('validate', example);
  if (code === 0) {
    console.log(`\n$ sno-relocate plan ${path.relative(repo, example)} --root ${root}`);
    code = cli('plan', example, '--root', root, '--state-dir', '/var/lib/sno-relocate');
  }
  process.exitCode = code;
} finally {
  rmSync(root, { recursive: true, force: true });
}
