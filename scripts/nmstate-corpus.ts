/**
 * Refreshes test/fixtures/nmstate-corpus from a checkout of the nmstate project:
 *
 *   npx tsx scripts/nmstate-corpus.ts /path/to/nmstate
 *
 * Copies every document of its examples/ folder (examples/policy holds nmpolicy files, not nmstate
 * states, and is left out) and, as a sample of its test suite, the desired and revert states of
 * rust/src/lib/unit_tests/gen_revert_test_files/ (documents nmstate applies). Writes the corpus's
 * README with the source and the commit. The files are copied byte for byte; test/nmstate/corpus.test.ts
 * validates each of them as a site-config's network.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const CORPUS = path.join(REPO, 'test/fixtures/nmstate-corpus');
const TEST_STATES = 'rust/src/lib/unit_tests/gen_revert_test_files';

const checkout = process.argv[2];
if (!checkout || !existsSync(path.join(checkout, 'examples'))) {
  console.error('usage: npx tsx scripts/nmstate-corpus.ts /path/to/nmstate-checkout');
  process.exit(2);
}
const commit = execFileSync('git', ['-C', checkout, 'rev-parse', 'HEAD'], { encoding: 'utf8' }).trim();

rmSync(CORPUS, { recursive: true, force: true });
mkdirSync(path.join(CORPUS, 'examples'), { recursive: true });
mkdirSync(path.join(CORPUS, 'tests'), { recursive: true });

const isYaml = (name: string) => /\.ya?ml$/.test(name);
const examples = readdirSync(path.join(checkout, 'examples')).filter(isYaml).sort();
for (const name of examples) copyFileSync(path.join(checkout, 'examples', name), path.join(CORPUS, 'examples', name));

const cases = readdirSync(path.join(checkout, TEST_STATES), { withFileTypes: true })
  .filter((d) => d.isDirectory())
  .map((d) => d.name)
  .sort();
let tests = 0;
for (const name of cases)
  for (const state of ['desired.yml', 'revert.yml']) {
    const from = path.join(checkout, TEST_STATES, name, state);
    if (!existsSync(from)) continue;
    copyFileSync(from, path.join(CORPUS, 'tests', `${name}.${state}`));
    tests++;
  }

writeFileSync(
  path.join(CORPUS, 'README.md'),
  `# nmstate's own documents

Copied unchanged from the nmstate project (https://github.com/nmstate/nmstate), commit
\`${commit}\`, by \`npx tsx scripts/nmstate-corpus.ts <nmstate checkout>\`; do not edit by hand.

- \`examples/\`: every document of nmstate's \`examples/\` folder (${examples.length} files).
- \`tests/\`: the desired and revert states of nmstate's \`${TEST_STATES}/\` (${tests} files),
  named \`<case>.desired.yml\` and \`<case>.revert.yml\`.

\`test/nmstate/corpus.test.ts\` gives each one to \`sno-relocate validate\`'s loader as a site-config's
network and expects no error: what nmstate accepts, the agent accepts.
`,
);
console.log(
  `${examples.length} examples and ${tests} test states from nmstate ${commit} in ${path.relative(REPO, CORPUS)}`,
);
