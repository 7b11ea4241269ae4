import { describe, expect, it } from 'vitest';
import { MessageId } from './events.js';
import { createLogger, formatText, logEvent, timed } from './logger.js';

function capture(options: Parameters<typeof createLogger>[0] = {}) {
  const lines: string[] = [];
  const log = createLogger({ level: 'debug', journal: false, ...options, write: (l) => lines.push(l) });
  return { log, lines };
}

const KEY = '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----';

describe('logger', () => {
  it('writes one text line per entry: time, level, [step], message, fields', () => {
    const { log, lines } = capture();
    log.child({ step: 'network' }).info({ checkpoint: '/cp/1', problems: ['no ping', 'no dns'] }, 'checking');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^\d{4}-\d\d-\d\dT[\d:.]+Z INFO {2}\[network\] checking checkpoint=\/cp\/1 problems="no ping,no dns"\n$/,
    );
  });

  it('under the journal, prefixes the syslog priority and leaves the time to journald', () => {
    const { log, lines } = capture({ journal: true });
    log.warn('disk is slow');
    log.error('gave up');
    expect(lines).toEqual(['<4>WARN  disk is slow\n', '<3>ERROR gave up\n']);
  });

  it('keeps every entry one line: escape sequences and newlines in messages and fields are escaped', () => {
    for (const journal of [false, true]) {
      const { log, lines } = capture({ journal });
      log.child({ step: 'net\nwork' }).error({ file: 'a\u001b[2J\nb' }, 'bad \u001b[H\nINFO  done: forged');
      expect(lines).toHaveLength(1);
      expect([...lines[0]!.slice(0, -1)].filter((c) => c.charCodeAt(0) < 0x20)).toEqual([]);
      expect(lines[0]).toContain('[net\\nwork] bad \\x1b[H\\nINFO  done: forged file="a\\u001b[2J\\nb"');
    }
  });

  it('redacts secrets in fields, in messages and in errors, in both formats', () => {
    for (const format of ['text', 'json'] as const) {
      const { log, lines } = capture({ format });
      log.info(
        { pullSecret: { auths: { 'r.example.com': { auth: 'cm9ib3Q6cGFzcw==' } } }, password: 'hunter2' },
        'loaded',
      );
      log.info(`read ${KEY}`);
      log.error({ err: new Error(`bad token: Bearer abcdefghijklmnop`) }, 'failed');
      const all = lines.join('');
      for (const secret of ['cm9ib3Q6cGFzcw==', 'hunter2', 'b3BlbnNzaC1rZXkt', 'abcdefghijklmnop'])
        expect(all).not.toContain(secret);
      expect(all).toContain('<redacted: 1 registry>');
    }
  });

  it('logs an event with its fixed message id', () => {
    const { log, lines } = capture({ format: 'json' });
    logEvent(log, 'error', 'stepFailed', { step: 'network' }, 'step failed: no gateway');
    const entry = JSON.parse(lines[0]!) as Record<string, unknown>;
    expect(entry).toMatchObject({
      msgId: MessageId.stepFailed,
      event: 'stepFailed',
      step: 'network',
      msg: 'step failed: no gateway',
      level: 50,
    });
  });

  it('times an operation as started, finished with durationMs, or failed', async () => {
    const { log, lines } = capture({ format: 'json' });
    await timed(log, 'nmstatectl show', async () => 1);
    await expect(timed(log, 'nmstatectl apply', async () => Promise.reject(new Error('exit 1')))).rejects.toThrow(
      'exit 1',
    );
    const entries = lines.map((l) => JSON.parse(l) as { msg: string; durationMs?: number; level: number });
    expect(entries.map((e) => e.msg)).toEqual([
      'nmstatectl show: started',
      'nmstatectl show: finished',
      'nmstatectl apply: started',
      'nmstatectl apply: failed',
    ]);
    expect(entries[1]!.durationMs).toBeGreaterThanOrEqual(0);
    expect(entries[3]!.level).toBe(40);
  });
});

describe('formatText', () => {
  it('shows an error only when the message does not already say it', () => {
    const said = formatText({ level: 50, msg: 'step failed: no gateway', err: { message: 'no gateway' } }, false);
    const unsaid = formatText({ level: 50, msg: 'step failed', err: { message: 'no gateway' } }, false);
    expect(said).toBe('ERROR step failed: no gateway');
    expect(unsaid).toBe('ERROR step failed err="no gateway"');
  });

  it('keeps the message id off journal lines, where it is a journal field', () => {
    const entry = { level: 30, time: 'T', msg: 'step started', msgId: MessageId.stepStarted, step: 'hostname' };
    expect(formatText(entry, false)).toBe('INFO  [hostname] step started');
    expect(formatText(entry, true)).toBe(`T INFO  [hostname] step started msgId=${MessageId.stepStarted}`);
  });
});
