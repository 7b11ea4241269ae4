/** The running agent's version: what `--version`, `status`, the hub report and the state file name. */
import pkg from '../../package.json' with { type: 'json' };

export const AGENT_VERSION: string = pkg.version;
