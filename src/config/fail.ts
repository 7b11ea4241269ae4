/** A refusal of a site-config: a ConfigError naming every error among the findings. */
import { ConfigError } from '../base/errors.js';
import { type Finding, formatFinding } from '../base/findings.js';

export function fail(findings: Finding[], summary?: string): never {
  const errors = findings.filter((f) => f.severity === 'error');
  throw new ConfigError(summary ?? `invalid site-config:\n  ${errors.map(formatFinding).join('\n  ')}`, findings);
}
