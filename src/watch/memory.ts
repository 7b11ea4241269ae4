/**
 * The long-running watcher's memory: what V8 keeps after the initial sync, and which of its
 * compilers the process ever pages in.
 */
import v8 from 'node:v8';
import vm from 'node:vm';

/**
 * A full garbage collection on request. The watcher's initial sync parses every watched object (tens
 * of megabytes of JSON for ten thousand objects) and keeps a few hundred bytes of the few that have
 * something to report; V8 hands the rest back only when its memory reducer finds the process idle,
 * anywhere from seconds to minutes later, so the watcher would sit at its sync peak until then.
 * Node offers gc() only behind --expose-gc, which a single executable cannot be started with: the
 * flag is set for the moment it takes to fetch the function from a fresh context, as Node's
 * documentation of v8.setFlagsFromString shows.
 */
export function collectGarbage(): void {
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as () => void;
  v8.setFlagsFromString('--no-expose-gc');
  gc();
}

/**
 * Keeps V8's compilers other than its interpreter out of this process from now on: no baseline
 * (Sparkplug) and no optimised (TurboFan) code. The long-running watcher spends its time idle, and
 * each compiler it never runs is code of the executable that is never paged in: measured with
 * bench/watch.ts, 3 MB of its resident size, for a sync of ten thousand objects a few tenths of a
 * second slower. Set at run time rather than with --jitless at start, which would make V8 reject
 * the executable's code cache (built without it) with a warning on every start.
 */
export function interpreterOnly(): void {
  v8.setFlagsFromString('--no-opt');
  v8.setFlagsFromString('--no-sparkplug');
}
