/**
 * The clock a shelved node wakes up with is not to be believed: a dead RTC battery or a shelf in
 * another time zone leaves it days or months off until NTP runs. Every judgment of time the agent
 * makes (a signature's notAfter, the validity of the site's CAs, the notBefore of what it issues)
 * is made on a trusted clock, decided here, pure:
 *
 * - a lower bound for the true time: the newest of the signature's signing time, the factory seal
 *   and the agent's build; a clock before it is known wrong;
 * - admission: on a clock chronyd has synchronised, or where no chronyd will ever synchronise it,
 *   time is judged at once; on a clock chronyd has not synchronised yet, a finding that holds only
 *   because of the time (a window the clock is outside of) is deferred, not refused;
 * - after the network and the site's NTP settings, the clock step waits (bounded) for chronyd, and
 *   every deferred finding is judged again: on the synchronised clock, or without NTP on a clock
 *   that is plausible (not before the lower bound); a clock known wrong and not synchronised stops
 *   the run with what to fix.
 */
import type { Finding, ValidityWindow } from './findings.js';

/** What says the true time is at least `at`. */
export interface TimeMark {
  /** `the site-config signature (signedAt)`, `factory seal`, `agent build` */
  what: string;
  at: Date;
}

/** chronyd's answer: synchronised, running but not (yet), or not there to ask. */
export type SyncState = 'synchronised' | 'unsynchronised' | 'absent';

/** The newest mark: the true time is no earlier. */
export function lowerBound(marks: readonly TimeMark[]): TimeMark | undefined {
  return marks.reduce<TimeMark | undefined>((a, b) => (a && a.at >= b.at ? a : b), undefined);
}

/** Why `now` is known wrong (before the lower bound), or undefined when it is plausible. */
export function clockKnownWrong(now: Date, bound: TimeMark | undefined): string | undefined {
  if (!bound || now.getTime() >= bound.at.getTime()) return undefined;
  return `the node's clock reads ${now.toISOString()}, before the ${bound.what} at ${bound.at.toISOString()}`;
}

/** Why `now` lies outside the window, or undefined when it lies inside. */
export function outsideWindow(window: ValidityWindow, now: Date): string | undefined {
  if (window.notBefore !== undefined && now.getTime() < Date.parse(window.notBefore))
    return `not valid before ${window.notBefore}`;
  if (window.notAfter !== undefined && now.getTime() > Date.parse(window.notAfter))
    return `expired on ${window.notAfter}`;
  return undefined;
}

/** What a finding of time is about, without what the clock it was made on said of it. */
export const subjectOf = (f: Finding): string => f.message.split(/ (?:expired on|is not valid before) /)[0]!;

/**
 * The deferred findings the true time already proves expired, at an instant it is no earlier than:
 * only a notAfter before it is proven (a notBefore after it proves nothing, the true time may be later).
 */
export function expiredAt(deferred: readonly Finding[], at: Date): string[] {
  return deferred.flatMap((f) => {
    const problem = f.window?.notAfter !== undefined ? outsideWindow({ notAfter: f.window.notAfter }, at) : undefined;
    return problem ? [`${f.path}: ${subjectOf(f)} ${problem}`] : [];
  });
}

/** One judgment per field and window: a deferred finding and the same certificate's passed one are one. */
const windowKey = (f: Finding): string => `${f.path} ${f.window?.notBefore ?? ''} ${f.window?.notAfter ?? ''}`;

/** Whether admission defers the findings of time: only on a clock chronyd will still synchronise. */
export const defersTime = (sync: SyncState): boolean => sync === 'unsynchronised';

export interface ClockInput {
  now: Date;
  bound: TimeMark | undefined;
  sync: SyncState;
  /** whether the bounded wait for chronyd is over */
  waited: boolean;
  /** the findings admission deferred, each with its window */
  deferred: readonly Finding[];
  /**
   * every window admission judged and passed (the site-config's certificates): judged again too,
   * since a clock months off passes a CA that expired, or one not valid yet
   */
  passed?: readonly Finding[];
}

export type ClockDecision =
  /** time may be judged now: `notes` say on what clock, and what was judged again */
  | { verdict: 'trusted'; notes: string[] }
  /** chronyd may still synchronise the clock: wait for it (bounded) */
  | { verdict: 'wait'; why: string }
  | { verdict: 'refuse'; reason: string };

const FIX_CLOCK =
  "give the site's time servers in spec.chronyConfig (reachable from the site network), or set the node's clock (BIOS, or timedatectl set-time) and run again";

/** On what clock the agent may judge time, and what the deferred findings say on it. */
export function decideClock(input: ClockInput): ClockDecision {
  const wrong = clockKnownWrong(input.now, input.bound);
  const clock =
    input.sync === 'synchronised'
      ? 'the clock chronyd synchronised'
      : input.sync === 'absent'
        ? 'the node clock (no chronyd to synchronise it)'
        : 'the node clock (chronyd did not synchronise it in time)';
  if (input.sync === 'unsynchronised' && !input.waited)
    return {
      verdict: 'wait',
      why:
        wrong ??
        `chronyd has not synchronised the clock${input.deferred.length ? `, and ${input.deferred.length} finding(s) wait for it` : ''}`,
    };
  if (input.sync !== 'synchronised' && wrong)
    return {
      verdict: 'refuse',
      reason: `${wrong}, which is known wrong, and no time server corrected it: ${FIX_CLOCK}`,
    };
  const seen = new Set(input.deferred.map(windowKey));
  const again = [...input.deferred, ...(input.passed ?? []).filter((f) => !seen.has(windowKey(f)))];
  const failed = again.flatMap((f) => {
    const problem = outsideWindow(f.window ?? {}, input.now);
    return problem ? [`${f.path}: ${subjectOf(f)} ${problem}`] : [];
  });
  if (failed.length)
    return {
      verdict: 'refuse',
      reason: `site-config refused, judged again on ${clock} (${input.now.toISOString()}): ${failed.join('; ')}`,
    };
  return {
    verdict: 'trusted',
    notes: [
      `time judged on ${clock}`,
      ...input.deferred.map((f) => `${f.path}: valid on ${clock}, judged again after the clock sync`),
      ...(again.length > input.deferred.length
        ? [`${again.length - input.deferred.length} certificate(s) admission passed: valid on ${clock} too`]
        : []),
    ],
  };
}
