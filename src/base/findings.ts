import { safeLine } from '../log/safe-text.js';

/** A validation finding: every one names where in the site-config it points. */
export type Severity = 'error' | 'warning';

export interface Finding {
  severity: Severity;
  /** JSON path into the site-config, e.g. `$.spec.network.internalIP`, or a file name */
  path: string;
  message: string;
  /**
   * A judgment of time: set when the finding comes from a certificate's validity at the clock it
   * was made at (notBefore to notAfter, ISO). Such a finding can be judged again on a trusted clock.
   */
  window?: ValidityWindow;
}

/** When a certificate or signature is valid: from notBefore (if any) to notAfter (if any). */
export interface ValidityWindow {
  notBefore?: string;
  notAfter?: string;
}

export function formatPath(segments: readonly PropertyKey[]): string {
  let out = '$';
  for (const s of segments) {
    if (typeof s === 'number') out += `[${s}]`;
    else if (typeof s === 'string' && /^[A-Za-z_][A-Za-z0-9_-]*$/.test(s)) out += `.${s}`;
    else out += `[${JSON.stringify(String(s))}]`;
  }
  return out;
}

/** One printable line: a path or message may quote a file name or a value from the stick. */
export function formatFinding(f: Finding): string {
  return safeLine(`${f.severity}: ${f.path}: ${f.message}`);
}

export const hasErrors = (findings: readonly Finding[]): boolean => findings.some((f) => f.severity === 'error');

/**
 * Splits findings when time is deferred: an error that holds only for the time (it has a window)
 * becomes a warning saying it is judged again, and is kept in `deferred` as it was.
 */
export function deferTimeFindings(findings: Finding[], deferred: Finding[]): void {
  for (const [i, f] of findings.entries()) {
    if (f.severity !== 'error' || f.window === undefined) continue;
    deferred.push(f);
    findings[i] = {
      severity: 'warning',
      path: f.path,
      message: `${f.message} on the node's clock, which chronyd has not synchronised: judged again once it has`,
    };
  }
}
