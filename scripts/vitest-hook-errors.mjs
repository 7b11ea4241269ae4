// A vitest reporter beside the JSON one: vitest's JSON report names a file that failed in a hook
// (beforeAll/afterAll of a describe block) or with an error outside any test, but not the error.
// This one writes those errors next to the JSON report (vitest-main.json → hooks-main.json) so
// scripts/summarize-tests.mjs can name them on the last lines of a CI log.
import { writeFileSync } from 'node:fs';
import path from 'node:path';

const firstLine = (e) => `${e?.name ?? 'Error'}: ${e?.message ?? String(e)}`.split('\n')[0].slice(0, 300);

function suiteErrors(task, file, out) {
  if (task.type !== 'suite') return;
  for (const e of task.result?.errors ?? [])
    out.push({ file: path.relative(process.cwd(), file), where: task.name || '(file)', error: firstLine(e) });
  for (const child of task.tasks ?? []) suiteErrors(child, file, out);
}

export default class HookErrors {
  onInit(ctx) {
    this.ctx = ctx;
  }

  onFinished(files = [], errors = []) {
    const json = this.ctx?.config.outputFile?.json;
    if (!json) return;
    const found = [];
    for (const file of files) suiteErrors(file, file.filepath, found);
    for (const e of errors) found.push({ file: '(run)', where: 'unhandled', error: firstLine(e) });
    writeFileSync(
      path.join(path.dirname(json), path.basename(json).replace(/^vitest-/, 'hooks-')),
      JSON.stringify(found),
    );
  }
}
