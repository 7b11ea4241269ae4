/**
 * Child processes of the VM suite: every one is tracked, and killed by pid if the test process
 * exits first; and the timing helpers the drivers poll with.
 */
import { execFile, type ChildProcess } from 'node:child_process';

export const delay = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
/** A timer that does not keep the process alive, for the losing side of a Promise.race. */
export const deadlineAfter = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms).unref());
export const now = (): number => performance.now();

const children = new Set<ChildProcess>();
let exitHookInstalled = false;

/** the child, killed by pid when the test process exits before it */
export function track(child: ChildProcess): ChildProcess {
  children.add(child);
  child.once('exit', () => children.delete(child));
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once('exit', () => {
      for (const c of children) {
        if (c.pid !== undefined && c.exitCode === null && c.signalCode === null) {
          try {
            process.kill(c.pid, 'SIGKILL');
          } catch {
            // already gone
          }
        }
      }
    });
  }
  return child;
}

export function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((r) => child.once('exit', () => r()));
}

export async function killAndWait(child: ChildProcess | undefined, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
  if (!child || child.pid === undefined) return;
  if (child.exitCode === null && child.signalCode === null) {
    try {
      process.kill(child.pid, signal);
    } catch {
      // already gone
    }
  }
  await exited(child);
}

/** the command's standard output; a failure carries its standard error */
export function execOut(cmd: string, args: string[], opts: { timeoutMs?: number } = {}): Promise<string> {
  return new Promise((res, rej) => {
    track(
      execFile(cmd, args, { maxBuffer: 16 * 1024 * 1024, timeout: opts.timeoutMs ?? 0 }, (err, stdout, stderr) => {
        if (err) rej(new Error(`${cmd} ${args.join(' ')}: ${err.message}\n${stderr}`));
        else res(stdout);
      }),
    );
  });
}
