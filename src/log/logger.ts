/**
 * One pino logger for the process. Lines go to stderr (stdout is for command
 * output). Under systemd they carry a syslog priority prefix, and the events
 * with a message id are also written as native journal entries so that
 * `journalctl -u sno-relocate MESSAGE_ID=...` finds them.
 */
import { spawnSync } from 'node:child_process';
import { fstatSync } from 'node:fs';
import pino from 'pino';
import { MessageId, type MessageIdName } from './events.js';
import { redactSecrets, scrubText } from './redact.js';
import { safeLine } from './safe-text.js';

export type Logger = pino.Logger;
export type LogFormat = 'text' | 'json';

export interface LoggerOptions {
  level?: string;
  format?: LogFormat;
  /** where lines go; stderr by default */
  write?: (line: string) => void;
  /** force journal mode on or off; by default, on when stderr is the journal stream */
  journal?: boolean;
}

const PRIORITY: Record<number, number> = { 10: 7, 20: 7, 30: 6, 40: 4, 50: 3, 60: 2 };
const LEVEL_NAME: Record<number, string> = {
  10: 'TRACE',
  20: 'DEBUG',
  30: 'INFO',
  40: 'WARN',
  50: 'ERROR',
  60: 'FATAL',
};
const HIDDEN_IN_TEXT = new Set(['level', 'time', 'msg', 'step', 'event']);

/** systemd sets JOURNAL_STREAM to the device:inode of the stream it connected. */
export function stderrIsJournal(): boolean {
  const stream = process.env.JOURNAL_STREAM;
  if (!stream) return false;
  try {
    const { dev, ino } = fstatSync(2);
    return stream === `${dev}:${ino}`;
  } catch {
    return false;
  }
}

function formatValue(value: unknown): string {
  const flat = Array.isArray(value) && value.every((v) => typeof v !== 'object') ? value.join(',') : value;
  const text = typeof flat === 'string' ? flat : JSON.stringify(flat);
  return /[\s"=]/.test(text) ? JSON.stringify(text) : text;
}

/** In text, an error adds only what its message does not already say. */
function errorField(err: unknown, msg: string): string | undefined {
  const message = typeof err === 'object' && err !== null && 'message' in err ? String(err.message) : String(err);
  return msg.includes(message) ? undefined : message;
}

/**
 * Off the journal a line carries its time and message id; in it, journald keeps both as fields. One
 * line always: control characters in a message or a field are escaped, so no value forges a line.
 */
export function formatText(entry: Record<string, unknown>, offJournal: boolean): string {
  const level = LEVEL_NAME[entry.level as number] ?? 'INFO';
  const step = entry.step ? `[${String(entry.step)}] ` : '';
  const msg = String(entry.msg ?? '');
  const fields = Object.entries({ ...entry, err: entry.err === undefined ? undefined : errorField(entry.err, msg) })
    .filter(([k, v]) => !HIDDEN_IN_TEXT.has(k) && v !== undefined && (offJournal || k !== 'msgId'))
    .map(([k, v]) => `${k}=${formatValue(v)}`)
    .join(' ');
  const time = offJournal ? `${String(entry.time)} ` : '';
  return safeLine(`${time}${level.padEnd(5)} ${step}${msg}${fields ? ` ${fields}` : ''}`);
}

function journalFields(entry: Record<string, unknown>, line: string): string {
  const fields: Record<string, string> = {
    MESSAGE: line,
    PRIORITY: String(PRIORITY[entry.level as number] ?? 6),
    MESSAGE_ID: String(entry.msgId),
    SYSLOG_IDENTIFIER: 'sno-relocate',
    // lets `journalctl -u` find entries whose sender exited before journald read its unit
    OBJECT_SYSTEMD_UNIT: process.env.SNO_RELOCATE_UNIT ?? 'sno-relocate.service',
  };
  if (entry.step) fields.SNO_RELOCATE_STEP = safeLine(String(entry.step));
  if (entry.event) fields.SNO_RELOCATE_EVENT = safeLine(String(entry.event));
  if (typeof entry.durationMs === 'number') fields.SNO_RELOCATE_DURATION_MS = String(entry.durationMs);
  return Object.entries(fields)
    .map(([k, v]) => `${k}=${v}`)
    .join('\n');
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const journal = options.journal ?? stderrIsJournal();
  const format = options.format ?? 'text';
  const write = options.write ?? ((line: string) => process.stderr.write(line));

  // synchronous, so journal order matches the order of events
  const sendNative = (entry: Record<string, unknown>, line: string): void => {
    const sent = spawnSync('logger', ['--journald'], {
      input: journalFields(entry, line),
      stdio: ['pipe', 'ignore', 'ignore'],
    });
    if (sent.error || sent.status !== 0) write(`<${PRIORITY[entry.level as number] ?? 6}>${line}\n`);
  };

  const destination = {
    write(json: string): void {
      if (format === 'json') return void write(json);
      const entry = JSON.parse(json) as Record<string, unknown>;
      const line = formatText(entry, !journal);
      if (journal && entry.msgId) return sendNative(entry, line);
      write(`${journal ? `<${PRIORITY[entry.level as number] ?? 6}>` : ''}${line}\n`);
    },
  };

  return pino(
    {
      level: options.level ?? 'info',
      base: undefined,
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { log: (obj) => redactSecrets(obj) },
      hooks: {
        logMethod(args, method) {
          const scrubbed = args.map((a) => (typeof a === 'string' ? scrubText(a) : a)) as Parameters<typeof method>;
          method.apply(this, scrubbed);
        },
      },
    },
    destination,
  );
}

/** Logs an event people search for, with its fixed message id. */
export function logEvent(
  log: Logger,
  level: 'info' | 'warn' | 'error',
  event: MessageIdName,
  fields: Record<string, unknown>,
  msg: string,
): void {
  log[level]({ msgId: MessageId[event], event, ...fields }, msg);
}

/** Runs one operation, logged as started / finished with durationMs / failed. */
export async function timed<T>(
  log: Logger,
  what: string,
  fn: () => Promise<T>,
  fields: Record<string, unknown> = {},
): Promise<T> {
  const started = performance.now();
  log.debug(fields, `${what}: started`);
  try {
    const result = await fn();
    log.debug({ ...fields, durationMs: Math.round(performance.now() - started) }, `${what}: finished`);
    return result;
  } catch (err) {
    log.warn({ ...fields, durationMs: Math.round(performance.now() - started), err }, `${what}: failed`);
    throw err;
  }
}
