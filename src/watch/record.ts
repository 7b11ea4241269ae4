/**
 * Recordings of what the watcher saw: one JSON object a line, `{"at": ISO time, ...event}`. Written by
 * `watch --record-events FILE`, read by `watch --replay FILE`, which evaluates the same checks at the
 * same moments and so reproduces every finding without a cluster.
 */
import { createWriteStream, type WriteStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import * as z from 'zod';
import { UsageError } from '../base/errors.js';
import { runChecks } from './checks/index.js';
import type { WatchContext } from './model.js';
import { RESOURCE_BY_KEY } from './resources.js';
import { ObjectStore, type WatchEvent } from './store.js';
import { evaluate, type Evaluation } from './track.js';

export type TimedEvent = WatchEvent & { at: string };

const watched = z.object({
  metadata: z.looseObject({ name: z.string() }),
  spec: z.record(z.string(), z.unknown()).optional(),
  status: z.record(z.string(), z.unknown()).optional(),
});
const resource = z.string().refine((r) => RESOURCE_BY_KEY.has(r), { message: 'not a watched resource' });
const at = z.iso.datetime({ offset: true });
const eventSchema = z.discriminatedUnion('type', [
  z.object({ at, type: z.literal('installed'), resource, version: z.string() }),
  z.object({ at, type: z.literal('uninstalled'), resource }),
  z.object({ at, type: z.literal('replace'), resource, objects: z.array(watched) }),
  z.object({ at, type: z.literal('upsert'), resource, object: watched }),
  z.object({ at, type: z.literal('delete'), resource, object: watched }),
  z.object({ at, type: z.literal('evaluate') }),
  z.object({
    at,
    type: z.literal('context'),
    context: z.object({
      siteRegistries: z.array(z.string()),
      digestMirrorSources: z.array(z.string()),
      tagMirrorSources: z.array(z.string()),
      factoryRegistries: z.array(z.string()),
    }),
  }),
]);

export interface Recorder {
  write(event: TimedEvent): void;
  close(): Promise<void>;
}

export function createRecorder(file: string): Recorder {
  const stream: WriteStream = createWriteStream(file, { flags: 'w', mode: 0o644 });
  return {
    write: (event) => void stream.write(`${JSON.stringify(event)}\n`),
    close: () => new Promise((resolve, reject) => stream.end((err?: Error | null) => (err ? reject(err) : resolve()))),
  };
}

/** Parses a recording; a bad line is a usage error naming the line and the field. */
export function parseRecording(text: string, file: string): TimedEvent[] {
  const events: TimedEvent[] = [];
  for (const [i, line] of text.split('\n').entries()) {
    if (line.trim() === '') continue;
    let json: unknown;
    try {
      json = JSON.parse(line);
    } catch {
      throw new UsageError(`${file}:${i + 1}: not a JSON object`);
    }
    const parsed = eventSchema.safeParse(json);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw new UsageError(
        `${file}:${i + 1}: ${issue.path.length > 0 ? `${issue.path.join('.')}: ` : ''}${issue.message}`,
      );
    }
    events.push(parsed.data as TimedEvent);
  }
  if (events.length === 0) throw new UsageError(`${file}: no events recorded`);
  return events;
}

export async function readRecording(file: string): Promise<TimedEvent[]> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new UsageError(`--replay: cannot read ${file}: ${(err as Error).message}`);
  }
  return parseRecording(text, file);
}

/**
 * Feeds the events to a store and evaluates where the recording says the watcher did (and once at
 * the end, if the last event was not an evaluation), at the recorded times, with the recorded
 * context (`ctx` stands in for a recording that has none).
 */
export function replay(events: readonly TimedEvent[], fallback: WatchContext): Evaluation {
  const store = new ObjectStore();
  let ctx = fallback;
  let last: Evaluation = { findings: [], firstSeen: new Map() };
  let evaluatedAt = -1;
  for (const [i, event] of events.entries()) {
    store.apply(event);
    if (event.type === 'context') ctx = event.context;
    if (event.type === 'evaluate') {
      last = evaluate(runChecks(store, ctx), last.firstSeen, new Date(event.at));
      evaluatedAt = i;
    }
  }
  return evaluatedAt === events.length - 1
    ? last
    : evaluate(runChecks(store, ctx), last.firstSeen, new Date(events.at(-1)!.at));
}
