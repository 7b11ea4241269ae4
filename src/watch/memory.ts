/**
 * A full garbage collection on request. The watcher's initial sync parses every watched object (tens
 * of megabytes of JSON for ten thousand objects) and keeps a few hundred bytes of the few that have
 * something to report; V8 hands the rest back only when its memory reducer finds the process idle,
 * anywhere from seconds to minutes later, so the watcher would sit at its sync peak until then.
 * Node offers gc() only behind --expose-gc, which a single executable cannot be started with: the
 * flag is set for the moment it takes to fetch the function from a fresh context, as Node's
 * documentation of v8.setFlagsFromString shows.
 */
import v8 from 'node:v8';
import vm from 'node:vm';

export function collectGarbage(): void {
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as () => void;
  v8.setFlagsFromString('--no-expose-gc');
  gc();
}
