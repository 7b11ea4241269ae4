/**
 * [hostname] The node's static hostname, set through systemd-hostnamed over D-Bus so that the
 * kernel's hostname follows at once and /etc/hostname keeps it across reboots. kubelet registers
 * the Node under the name node-name pinned, not under this one (src/node/node-name.ts). Planned
 * from /etc/hostname under the root, which is what hostnamed reads.
 */
import { ConfigError, VerificationError } from '../base/errors.js';
import type { Step } from './step.js';
import { HOSTNAME_FILE, hostnameProblem, readStaticHostname } from '../node/hostname.js';

function wanted(name: string | undefined): string | undefined {
  if (name === undefined) return undefined;
  // the config rules refuse these already: never hand hostnamed a name that would break the node
  const problem = hostnameProblem(name);
  if (problem)
    throw new ConfigError('invalid site-config', [{ severity: 'error', path: '$.spec.hostname', message: problem }]);
  return name;
}

/** What the step reads: the static hostname in /etc/hostname, which is what hostnamed reads. */
export interface HostnameView {
  current: string;
}

/** What apply does: hand hostnamed this static hostname. */
export interface HostnameDecision {
  hostname: string;
}

export const hostnameStep: Step<HostnameView, HostnameDecision> = {
  name: 'hostname',
  group: 'node',
  description: 'static hostname through systemd-hostnamed (D-Bus)',
  inputs: (site) => site.hostname ?? null,

  async survey(ctx) {
    return { current: await readStaticHostname(ctx.fs) };
  },

  plan({ current }, site) {
    const name = wanted(site.hostname);
    if (name === undefined) return { action: 'noop', reason: 'the site-config sets no hostname' };
    if (current === name) return { action: 'noop', reason: `the static hostname is already ${name}` };
    return {
      action: 'change',
      summary: `set the static hostname to ${name}`,
      changes: [
        {
          action: 'set',
          target: 'static hostname',
          summary: 'through systemd-hostnamed',
          diff: [`- ${current || '(none)'}`, `+ ${name}`],
        },
      ],
      decision: { hostname: name },
    };
  },

  async apply(ctx, { hostname }) {
    await (await ctx.systemd()).setStaticHostname(hostname);
    ctx.log.info({ hostname }, `static hostname set to ${hostname}`);
  },

  // its own: hostnamed is asked too, since kubelet registers under the name it gives the kernel,
  // and the file alone does not show that the name reached it
  async verify(ctx) {
    const name = wanted(ctx.site.hostname);
    if (name === undefined) return;
    const onBus = await (await ctx.systemd()).staticHostname();
    const onDisk = await readStaticHostname(ctx.fs);
    if (onBus !== name || onDisk !== name)
      throw new VerificationError(
        `hostname: want ${name}, systemd-hostnamed reports "${onBus}" and ${HOSTNAME_FILE} holds "${onDisk}"`,
        { step: 'hostname', retryable: true },
      );
  },
};
