/**
 * The one reader of the JSON files the agent keeps in its state folder (the run state, the
 * watcher's status and context, remembered apps domains). A file that is not there is undefined;
 * one that is not JSON, or not the expected shape, is refused with its host path and the JSON path
 * of what is wrong: never taken as empty, never guessed at.
 */
import type * as z from 'zod';
import { RefusedError } from '../base/errors.js';
import { formatPath } from '../base/findings.js';
import type { RootFs } from './fs.js';

export interface JsonFile<T> {
  /** how messages name the file, e.g. `state file` */
  what: string;
  schema: z.ZodType<T>;
  /** what to do about a damaged one, added to the message */
  advice?: string;
}

export async function readJsonFile<T>(fs: RootFs, file: string, spec: JsonFile<T>): Promise<T | undefined> {
  const text = await fs.readText(file);
  if (text === undefined) return undefined;
  const damaged = (why: string) =>
    new RefusedError(`${spec.what} ${fs.resolve(file)} is damaged (${why})${spec.advice ? `; ${spec.advice}` : ''}`);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw damaged(`not valid JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
  const parsed = spec.schema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw damaged(`${formatPath(issue.path)}: ${issue.message}`);
  }
  return parsed.data;
}
