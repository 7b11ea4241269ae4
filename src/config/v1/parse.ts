/** Parse a document into a typed v1 site-config; unknown keys become warnings, not errors. */
import type * as z from 'zod';
import { type Finding, formatPath } from '../../base/findings.js';
import { siteConfigSchema, type SiteConfigV1 } from './schema.js';

export interface ParseResult<T> {
  value?: T;
  findings: Finding[];
}

/**
 * Runs a strict schema; keys it does not know are reported as warnings and
 * dropped, and the document is parsed again, so only real errors fail it.
 * The unknown keys are removed from `input` itself: it is a freshly parsed
 * document, a tree (the YAML reader refuses shared collections) that nothing
 * else holds, and copying it first would expand every alias it has.
 */
export function parseLenient<T>(schema: z.ZodType<T>, input: unknown, prefix: PropertyKey[] = []): ParseResult<T> {
  const findings: Finding[] = [];
  const doc = input;
  for (;;) {
    const result = schema.safeParse(doc);
    if (result.success) return { value: result.data, findings };
    const unknownKeys = result.error.issues.filter((i) => i.code === 'unrecognized_keys');
    const errors = result.error.issues.filter((i) => i.code !== 'unrecognized_keys');
    for (const issue of unknownKeys) {
      for (const key of issue.keys) {
        findings.push({
          severity: 'warning',
          path: formatPath([...prefix, ...issue.path, key]),
          message: 'unknown key, ignored',
        });
        const parent = issue.path.reduce<unknown>((o, k) => (o as Record<PropertyKey, unknown>)[k as PropertyKey], doc);
        Reflect.deleteProperty(parent as object, key);
      }
    }
    if (unknownKeys.length === 0 || errors.length > 0) {
      for (const issue of errors) {
        findings.push({
          severity: 'error',
          path: formatPath([...prefix, ...issue.path]),
          message: describeIssue(issue),
        });
      }
      return { findings };
    }
  }
}

function describeIssue(issue: z.core.$ZodIssue): string {
  if (issue.code === 'invalid_type') {
    return issue.input === undefined ? `required (${issue.expected})` : `expected ${issue.expected}`;
  }
  return issue.message;
}

export function parseSiteConfig(input: unknown): ParseResult<SiteConfigV1> {
  return parseLenient(siteConfigSchema, input);
}
