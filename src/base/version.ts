/** The running agent's version: what `--version`, `status`, the hub report and the state file name. */
import pkg from '../../package.json' with { type: 'json' };

/** set by build.sh from SNO_RELOCATE_VERSION: a build stamped with a release's version */
declare const __SNO_RELOCATE_VERSION__: string | undefined;

export const AGENT_VERSION: string =
  typeof __SNO_RELOCATE_VERSION__ === 'string' ? __SNO_RELOCATE_VERSION__ : pkg.version;
