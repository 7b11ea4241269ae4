import { safeLine } from '../log/safe-text.js';

/** A validation finding: every one names where in the site-config it points. */
export type Severity = 'error' | 'warning';

export interface Finding {
  severity: Severity;
  /** JSON path into the site-config, e.g. `$.spec.network.internalIP`, or a file name */
  path: string;
  message: string;
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
