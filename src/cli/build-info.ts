/**
 * When this agent was built: build.sh stamps the time of the commit it builds from into the bundle
 * (esbuild --define), a lower bound for the true time on any node that runs it. Unstamped (run
 * from source) there is none.
 */
const stamped: string | undefined = process.env.SNO_RELOCATE_BUILT_AT;

export const BUILT_AT: Date | undefined =
  stamped !== undefined && !Number.isNaN(Date.parse(stamped)) ? new Date(stamped) : undefined;
