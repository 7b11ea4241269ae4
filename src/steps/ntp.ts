/**
 * [ntp] The site's chrony.conf (spec.chronyConfig, the image-based install's chrony_config): the time
 * servers of the site, which the factory's cannot reach. lifecycle-agent has recert rewrite
 * /etc/chrony.conf, in the stored MachineConfigs too, and restarts chronyd. This agent cannot change
 * the MachineConfigs, and /etc/chrony.conf is a file of the rendered config on every cluster that
 * set NTP sources through a MachineConfig (the installer's additionalNTPSources among them), where
 * writing it by hand is drift: the machine-config daemon marks the node Degraded and refuses the
 * next update. So the agent writes no file the daemon owns:
 *
 * - the site's configuration goes into a file of its own, /etc/sno-relocate/chrony.conf;
 * - a chronyd.service drop-in of its own starts chronyd with `-f` naming that file, after
 *   $OPTIONS, so it wins over any -f there (chronyd takes the last one);
 * - /etc/chrony.conf stays exactly as the rendered config declares it, so the daemon's drift
 *   monitor and preflight check find nothing; a path the current config declares is refused (exit 3).
 *
 * chronyd is restarted through systemd's D-Bus API after a daemon reload. A pending marker in the
 * state folder, written before the files and removed after the restart, makes a run cut off in
 * between restart it the next time; when chronyd does not come back, the previous files are put
 * back, chronyd is restarted with them and the step fails.
 */
import type { Step } from './step.js';
import type { Change, PlanResult } from '../engine/step.js';
import { fileChange, type HostFile, type ManagedFile, readHostFiles } from '../node/managed-file.js';
import { type DeclaredFiles, declaredFiles, driftFromRendered } from '../node/rendered-config.js';
import { restartPending, restartWithFiles, type ServiceFiles } from '../node/restart-with-files.js';

export const CHRONYD_UNIT = 'chronyd.service';
export const SITE_CHRONY_CONF = '/etc/sno-relocate/chrony.conf';
export const CHRONYD_DROP_IN = '/etc/systemd/system/chronyd.service.d/30-sno-relocate-chrony.conf';
const HEADER = '# Installed by sno-relocate from the site-config (spec.chronyConfig).';

export function renderChronydDropIn(): string {
  return `${HEADER}
# chronyd reads the site's configuration; /etc/chrony.conf stays as the MachineConfigs declare it.
[Service]
ExecStart=
ExecStart=/usr/sbin/chronyd $OPTIONS -f ${SITE_CHRONY_CONF}
`;
}

/** The two files, root-owned and world-readable as chrony's own configuration. */
function files(chronyConfig: string): ManagedFile[] {
  const content = chronyConfig.endsWith('\n') ? chronyConfig : `${chronyConfig}\n`;
  return [
    { path: SITE_CHRONY_CONF, content, mode: 0o644, uid: 0, gid: 0 },
    { path: CHRONYD_DROP_IN, content: renderChronydDropIn(), mode: 0o644, uid: 0, gid: 0 },
  ];
}

const CHRONYD: ServiceFiles = {
  step: 'ntp',
  unit: CHRONYD_UNIT,
  marker: 'chronyd-restart-pending',
  paths: [SITE_CHRONY_CONF, CHRONYD_DROP_IN],
  describe: "the site's chrony.conf",
  reload: true,
};

/** What the step reads: its two files, the rendered config's files, and whether a restart is owed. */
export interface NtpView {
  files: Record<string, HostFile>;
  declared?: DeclaredFiles;
  restartPending: boolean;
}

/** The changes the host needs: files to write (or, without a site chrony.conf, an earlier site's to remove). */
function changes(view: NtpView, config: string | undefined): Change[] {
  const out: Change[] = [];
  if (config === undefined) {
    if (view.files[CHRONYD_DROP_IN]?.content.startsWith(HEADER))
      for (const target of [CHRONYD_DROP_IN, SITE_CHRONY_CONF])
        out.push({ action: 'delete', target, summary: "an earlier site's NTP configuration" });
  } else {
    for (const file of files(config)) {
      const change = fileChange(
        view.files[file.path],
        file,
        file.path === SITE_CHRONY_CONF ? "the site's chrony.conf" : 'chronyd reads the site chrony.conf',
      );
      if (change) out.push(change);
    }
  }
  if (out.length > 0 || view.restartPending)
    out.push({
      action: 'start',
      target: CHRONYD_UNIT,
      summary:
        out.length === 0
          ? 'restart: a previous run changed its files but did not restart it'
          : 'restart over D-Bus after a daemon reload, so that it reads the changed files',
    });
  return out;
}

/**
 * What apply does: chronyd restarted, after a daemon reload, with the agent's files as `files`
 * holds them (none: removed).
 */
export interface NtpDecision {
  files: ManagedFile[];
}

export const ntpStep: Step<NtpView, NtpDecision> = {
  name: 'ntp',
  group: 'node',
  description:
    "the site's chrony.conf in a file of the agent's and a chronyd drop-in naming it (no MachineConfig file touched), chronyd restarted over D-Bus",
  inputs: (site) => site.chronyConfig ?? null,

  async survey(ctx) {
    const declared = await declaredFiles(ctx.fs);
    return {
      files: await readHostFiles(ctx.fs, CHRONYD.paths),
      ...(declared && { declared }),
      restartPending: await restartPending(ctx, CHRONYD),
    };
  },

  plan(view, site): PlanResult<NtpDecision> {
    const config = site.chronyConfig;
    if (config !== undefined) {
      const drift = files(config)
        .map((f) => driftFromRendered(view.declared, f.path, f.content))
        .filter((r): r is string => r !== undefined);
      if (drift.length > 0) return { action: 'conflict', reason: drift.join('; ') };
    }
    const todo = changes(view, config);
    if (todo.length === 0)
      return {
        action: 'noop',
        reason:
          config === undefined
            ? "the site-config gives no chrony.conf: the node's NTP stays"
            : "chronyd runs with the site's chrony.conf",
      };
    return {
      action: 'change',
      summary:
        config === undefined
          ? "give chronyd back the node's own chrony.conf"
          : "run chronyd with the site's chrony.conf",
      changes: todo,
      decision: { files: config === undefined ? [] : files(config) },
    };
  },

  async apply(ctx, decision) {
    await restartWithFiles(ctx, CHRONYD, decision.files);
    ctx.log.info({ file: SITE_CHRONY_CONF, unit: CHRONYD_UNIT }, "chronyd restarted with the site's chrony.conf");
  },
};
