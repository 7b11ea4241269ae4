/**
 * [node-pull-secret] The registry credentials kubelet and CRI-O pull with, in
 * /var/lib/kubelet/config.json (0600, root), before kubelet starts: the first pulls after the gate
 * opens already need the site's registries. `replace` writes the site's auths; `merge` adds them to
 * the ones already there (the site's entry wins for a registry in both). Plans and logs show only
 * how many registries, never the credentials.
 */
import { isDeepStrictEqual } from 'node:util';
import type { DockerConfig } from '../config/v1/schema.js';
import type { Step, StepContext } from '../config/site.js';
import { describeAuths } from '../log/redact.js';
import { fileDrift, type ManagedFile, writeManagedFile } from '../node/managed-file.js';
import { expectSettled } from '../node/settled.js';

export const KUBELET_AUTH_FILE = '/var/lib/kubelet/config.json';

type Desired =
  | { state: 'absent' }
  | { state: 'unmergeable'; why: string }
  | { state: 'wanted'; value: DockerConfig; file: ManagedFile; current?: unknown };

function parseCurrent(text: string | undefined): { value?: unknown; error?: string } {
  if (text === undefined) return {};
  try {
    return { value: JSON.parse(text) as unknown };
  } catch {
    // never quote the parser's message: it shows the text around the error, credentials included
    return { error: 'not valid JSON' };
  }
}

async function desired(ctx: StepContext): Promise<Desired> {
  const site = ctx.site.pullSecret;
  if (site === undefined) return { state: 'absent' };
  const current = parseCurrent(await ctx.fs.readText(KUBELET_AUTH_FILE));
  let value: DockerConfig = site;
  if (ctx.site.pullSecretPolicy === 'merge' && current.value !== undefined) {
    const auths = (current.value as { auths?: unknown }).auths;
    if (auths === null || typeof auths !== 'object' || Array.isArray(auths))
      return { state: 'unmergeable', why: `${KUBELET_AUTH_FILE} holds no "auths" object to merge into` };
    value = { ...(current.value as object), auths: { ...(auths as DockerConfig['auths']), ...site.auths } };
  } else if (ctx.site.pullSecretPolicy === 'merge' && current.error) {
    return {
      state: 'unmergeable',
      why: `${KUBELET_AUTH_FILE} is ${current.error}, so the site's registries cannot be merged into it`,
    };
  }
  return {
    state: 'wanted',
    value,
    // root-owned whatever the agent runs as: kubelet and CRI-O read it as root, nobody else may
    file: {
      path: KUBELET_AUTH_FILE,
      content: `${JSON.stringify(value)}\n`,
      mode: 0o600,
      uid: 0,
      gid: 0,
      showDiff: false,
    },
    ...(current.value !== undefined && { current: current.value }),
  };
}

export const nodePullSecretStep: Step = {
  name: 'node-pull-secret',
  group: 'node',
  description: '`/var/lib/kubelet/config.json`, mode 0600',
  inputs: (site) => ({ pullSecret: site.pullSecret ?? null, policy: site.pullSecretPolicy }),

  async plan(ctx) {
    const want = await desired(ctx);
    if (want.state === 'absent') return { action: 'noop', reason: 'the site-config has no pull secret' };
    if (want.state === 'unmergeable') return { action: 'conflict', reason: want.why };
    const drift = await fileDrift(ctx.fs, want.file);
    // compared as JSON, so a file written by another tool with other spacing is not rewritten
    const sameContent = want.current !== undefined && isDeepStrictEqual(want.current, want.value);
    const reasons = drift.reasons.filter((r) => !(sameContent && r === 'content differs'));
    const described = describeAuths(want.value);
    if (reasons.length === 0)
      return { action: 'noop', reason: `${KUBELET_AUTH_FILE} already holds the site's credentials (${described})` };
    return {
      action: 'change',
      summary: `${ctx.site.pullSecretPolicy} the node's registry credentials`,
      changes: [
        {
          action: drift.exists ? 'update' : 'create',
          target: KUBELET_AUTH_FILE,
          summary: `${described}, ${ctx.site.pullSecretPolicy}; ${reasons.join('; ')}`,
          ...(drift.exists &&
            want.current !== undefined && { diff: [`- ${describeAuths(want.current)}`, `+ ${described}`] }),
        },
      ],
    };
  },

  async apply(ctx) {
    const want = await desired(ctx);
    if (want.state !== 'wanted') return;
    await writeManagedFile(ctx.fs, want.file);
    ctx.log.info(
      { file: KUBELET_AUTH_FILE, registries: Object.keys(want.value.auths).length },
      'node pull secret written',
    );
  },

  verify: (ctx) => expectSettled(nodePullSecretStep, ctx),
};
