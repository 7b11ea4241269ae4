import path from 'node:path';
import { UsageError } from '../../base/errors.js';
import { readInventory } from '../../fleet/inventory.js';
import { type HubObjectsOptions, renderFleet, type SiteResult, writeHubObjects } from '../../fleet/render.js';
import { readTemplate } from '../../fleet/template.js';
import { keyId } from '../../trust/signature.js';
import { type Invocation, oneOf } from '../args.js';
import type { OptionsOf } from './options.js';
import { createRuntime } from '../runtime.js';
import type { CommandResult } from './result.js';
import { expiryFlag, signingKeyFlag } from './sign.js';

/** A progress line on a terminal, redrawn at most every 100 ms; nothing when stderr is a file or pipe. */
function progressLine(): ((done: number, total: number) => void) | undefined {
  if (!process.stderr.isTTY) return undefined;
  let last = 0;
  return (done, total) => {
    const now = Date.now();
    if (done < total && now - last < 100) return;
    last = now;
    process.stderr.write(`\rrendering sites: ${done}/${total}${done === total ? '\n' : ''}`);
  };
}

function summary(results: SiteResult[], out: string, signedWith: string | undefined, hub: string[]): string {
  const ok = results.filter((r) => r.ok);
  const failed = results.filter((r) => !r.ok);
  const lines = [
    `rendered ${ok.length} of ${results.length} site(s) into ${out}${signedWith ? `, signed with key ${signedWith}` : ''}${ok.some((r) => r.iso) ? ', each packed as <site>.iso' : ''}`,
    ...(hub.length > 0 ? [`hub objects: ${hub.length} file(s) in ${path.dirname(hub[0]!)}`] : []),
  ];
  if (failed.length > 0) {
    lines.push(`failed ${failed.length}: ${failed.map((r) => r.site || r.where).join(', ')}`);
    for (const r of failed) for (const e of r.errors ?? []) lines.push(`  ${r.site || '?'}: ${e}`);
  }
  return `${lines.join('\n')}\n`;
}

/** `--hub-objects DIR [--placement NAMESPACE/NAME]` */
function hubObjectsFlags(inv: Invocation<OptionsOf<'render'>>): HubObjectsOptions | undefined {
  const { 'hub-objects': dir, placement } = inv.flags;
  if (placement !== undefined && dir === undefined)
    throw new UsageError('--placement needs --hub-objects DIR: it names the Placement of the ManifestWorkReplicaSet');
  if (dir === undefined) return undefined;
  if (placement === undefined) return { dir: path.resolve(dir) };
  const [namespace, name, ...rest] = placement.split('/');
  if (!namespace || !name || rest.length > 0) throw new UsageError(`--placement ${placement}: expected NAMESPACE/NAME`);
  return { dir: path.resolve(dir), placement: { namespace, name } };
}

/** `render --inventory FILE --template DIR --out DIR [--key K --not-after D] [--iso] [--hub-objects DIR]` */
export async function renderCommand(inv: Invocation<OptionsOf<'render'>>): Promise<CommandResult> {
  const { inventory: inventoryFile, template: templateDir, out, key } = inv.flags;
  if (!inventoryFile || !templateDir || !out)
    throw new UsageError('render needs --inventory FILE, --template DIR and --out DIR');
  if (inv.positionals.length) throw new UsageError('render takes no PATH');
  const format = oneOf('-o', inv.flags.output, ['text', 'json'] as const, 'text');
  if (inv.flags['not-after'] && !key) throw new UsageError('--not-after needs --key: only a signature can expire');
  const notAfter = expiryFlag(inv.flags['not-after']);
  const hubObjects = hubObjectsFlags(inv);
  const privateKey = key ? await signingKeyFlag(key) : undefined;
  const rt = createRuntime(inv.flags);
  const inventory = await readInventory(inventoryFile);
  const template = await readTemplate(templateDir);
  const unknown = [...template.columns].filter((c) => !inventory.columns.includes(c));
  if (unknown.length > 0)
    throw new UsageError(
      `${path.basename(inventoryFile)}: no column ${unknown.map((c) => `"${c}"`).join(', ')}, which the template uses`,
    );
  const progress = progressLine();
  const results = await renderFleet({
    inventory,
    template,
    out: path.resolve(out),
    now: new Date(),
    ...(privateKey && { key: privateKey }),
    ...(notAfter && { notAfter }),
    ...(inv.flags.iso && { iso: { exec: rt.exec } }),
    ...(progress && { progress }),
  });
  const hub = hubObjects ? await writeHubObjects(hubObjects, results) : [];
  const signedWith = privateKey ? keyId(privateKey) : undefined;
  const exitCode = results.every((r) => r.ok) ? 0 : 2;
  if (format === 'json')
    return {
      exitCode,
      stdout: `${JSON.stringify({ rendered: results.filter((r) => r.ok).length, failed: results.filter((r) => !r.ok).length, signedWith, sites: results, hubObjects: hub }, null, 2)}\n`,
    };
  return { exitCode, stdout: summary(results, out, signedWith, hub) };
}
