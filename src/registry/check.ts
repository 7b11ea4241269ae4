/**
 * The registry check: every image the node needs asked for where CRI-O will pull it from once the
 * site's mirrors are live (resolve.ts), with the site's credentials and trust (client.ts). First
 * each site registry the mirrors name is asked for its API root, so a registry that is down,
 * untrusted or refuses the credentials is said once and at once; then the images, a bounded number
 * at a time, within a bound for the whole check, with progress as it goes. A result per image.
 */
import pLimit from 'p-limit';
import type { Mirror } from '../config/v1/schema.js';
import type { Outcome, RegistryClient } from './client.js';
import { isCritical, type ImageRole, type NeededImage } from './needed.js';
import { formatImage, parseImage, pullSources, referenceOf, registryEntries, type PullSource } from './resolve.js';

export interface ImageResult {
  image: string;
  role: ImageRole;
  users: string[];
  status: 'present' | 'missing' | 'unchecked';
  /** where it was found */
  from?: string;
  /** each place asked, in order, and its answer (when not found there) */
  asked: { at: string; answer: string }[];
}

export interface RegistryFailure {
  host: string;
  kind: Outcome['kind'];
  detail: string;
}

export interface CheckReport {
  results: ImageResult[];
  /** the site's registries that could not be used at all */
  registries: RegistryFailure[];
  durationMs: number;
  timeoutSeconds: number;
}

export interface CheckInput {
  images: readonly NeededImage[];
  digestMirrors: readonly Mirror[];
  tagMirrors: readonly Mirror[];
  client: Pick<RegistryClient, 'manifest' | 'ping'>;
  concurrency: number;
  timeoutSeconds: number;
  /** told after each image: how many are done of how many */
  onProgress?(done: number, total: number): void;
  monotonic(): number;
}

const hostOf = (location: string) => location.slice(0, location.indexOf('/'));

/** The site registries the mirrors send pulls to (those some image will be asked from). */
function mirrorHosts(sources: readonly PullSource[][]): string[] {
  return [
    ...new Set(
      sources
        .flat()
        .filter((s) => s.mirror)
        .map((s) => hostOf(s.location)),
    ),
  ];
}

export async function checkImages(input: CheckInput): Promise<CheckReport> {
  const began = input.monotonic();
  const deadline = began + input.timeoutSeconds * 1000;
  const entries = registryEntries(input.digestMirrors, input.tagMirrors);
  const planned = input.images.map((needed) => {
    const ref = parseImage(needed.image)!;
    return { needed, ref, sources: pullSources(ref, entries) };
  });
  const hosts = mirrorHosts(planned.map((p) => p.sources));
  const pinged = await Promise.all(hosts.map(async (host) => ({ host, outcome: await input.client.ping(host) })));
  const registries: RegistryFailure[] = pinged
    .filter((p) => p.outcome.kind !== 'present')
    .map((p) => ({ host: p.host, kind: p.outcome.kind, detail: 'detail' in p.outcome ? p.outcome.detail : '' }));
  const report = (results: ImageResult[]): CheckReport => ({
    results,
    registries,
    durationMs: Math.round(input.monotonic() - began),
    timeoutSeconds: input.timeoutSeconds,
  });
  if (registries.length > 0) return report([]);

  // a host that did not answer once is not asked again: a source a disconnected site cannot reach
  // would otherwise cost a timeout per image
  const down = new Map<string, string>();
  const limit = pLimit(input.concurrency);
  let done = 0;
  const results = await Promise.all(
    planned.map(({ needed, ref, sources }) =>
      limit(async (): Promise<ImageResult> => {
        const base = { image: needed.image, role: needed.role, users: needed.users };
        const asked: ImageResult['asked'] = [];
        try {
          if (input.monotonic() > deadline) return { ...base, status: 'unchecked', asked };
          if (sources.length === 0)
            asked.push({ at: '(none)', answer: 'its source is blocked and no mirror serves this kind of pull' });
          for (const source of sources) {
            const at = formatImage(source.location, ref);
            const host = hostOf(source.location);
            const known = down.get(host);
            if (known) {
              asked.push({ at, answer: known });
              continue;
            }
            const outcome = await input.client.manifest(source.location, referenceOf(ref));
            if (outcome.kind === 'present') return { ...base, status: 'present', from: at, asked };
            if (outcome.kind === 'unreachable') down.set(host, outcome.detail);
            asked.push({ at, answer: outcome.detail });
          }
          return { ...base, status: 'missing', asked };
        } finally {
          done += 1;
          input.onProgress?.(done, planned.length);
        }
      }),
    ),
  );
  return report(results);
}

const count = (n: number) => n.toLocaleString('en-US');
const MAX_LISTED = 5;

/** One image as a refusal or a warning names it: the image, who needs it, and each place asked. */
const described = (r: ImageResult) =>
  `${r.image} (${r.role}; ${r.users.join(', ')}): asked ${r.asked.map((a) => `${a.at}: ${a.answer}`).join('; ')}`;

const listed = (results: readonly ImageResult[]) =>
  results.slice(0, MAX_LISTED).map(described).join(' | ') +
  (results.length > MAX_LISTED ? ` | and ${count(results.length - MAX_LISTED)} more` : '');

export type Verdict = { refused: string } | { passed: string; warnings: string[] };

/** What the report decides: a refusal, or a pass with the workload images that are missing. */
export function verdictOf(report: CheckReport): Verdict {
  if (report.registries.length > 0)
    return {
      refused: `the site's registry cannot be used: ${report.registries.map((r) => `${r.host} (${r.kind}): ${r.detail}`).join('; ')}`,
    };
  const unchecked = report.results.filter((r) => r.status === 'unchecked');
  if (unchecked.length > 0)
    return {
      refused: `the registry check did not finish within ${report.timeoutSeconds} s: ${count(unchecked.length)} of ${count(report.results.length)} images unchecked`,
    };
  const missing = report.results.filter((r) => r.status === 'missing');
  const critical = missing.filter((r) => isCritical(r.role));
  if (critical.length > 0)
    return {
      refused: `${count(critical.length)} image${critical.length === 1 ? '' : 's'} the control plane or platform needs cannot be pulled through the site's registries: ${listed(critical)}`,
    };
  const workloads = missing.filter((r) => !isCritical(r.role));
  const byRole = (role: ImageRole) => report.results.filter((r) => r.role === role).length;
  const present = report.results.length - missing.length;
  return {
    passed: `${count(present)} of ${count(report.results.length)} images served by the site's registries (payload ${count(byRole('payload'))}, platform ${count(byRole('platform'))}, catalog ${count(byRole('catalog'))}, workload ${count(byRole('workload'))}) in ${(report.durationMs / 1000).toFixed(1)} s`,
    warnings:
      workloads.length > 0
        ? [
            `${count(workloads.length)} workload image${workloads.length === 1 ? '' : 's'} missing: ${listed(workloads)}`,
          ]
        : [],
  };
}
