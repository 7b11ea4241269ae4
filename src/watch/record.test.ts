import { describe, expect, it } from 'vitest';
import { UsageError } from '../base/errors.js';
import { EMPTY_CONTEXT } from './model.js';
import { parseRecording, replay } from './record.js';

const line = (event: object) => JSON.stringify({ at: '2026-03-01T10:00:00.000Z', ...event });
const co = (status: string) => ({ metadata: { name: 'dns' }, status: { conditions: [{ type: 'Available', status }] } });

describe('recordings', () => {
  it.each([
    ['not JSON', '{', 'rec.jsonl:1: not a JSON object'],
    [
      'an unknown event',
      line({ type: 'bogus' }),
      "rec.jsonl:1: type: Invalid discriminator value. Expected 'installed' | 'uninstalled' | 'replace' | 'upsert' | 'delete' | 'evaluate' | 'context'",
    ],
    [
      'an unknown resource',
      line({ type: 'upsert', resource: 'pods', object: co('True') }),
      'rec.jsonl:1: resource: not a watched resource',
    ],
    [
      'an object without a name',
      line({ type: 'upsert', resource: 'clusteroperators', object: { metadata: {} } }),
      'rec.jsonl:1: object.metadata.name: Invalid input: expected string, received undefined',
    ],
    ['a bad time', JSON.stringify({ at: 'yesterday', type: 'evaluate' }), 'rec.jsonl:1: at: Invalid ISO datetime'],
    ['nothing', '\n', 'rec.jsonl: no events recorded'],
  ])('refuses %s, naming the line and field', (_name, text, message) => {
    expect(() => parseRecording(text, 'rec.jsonl')).toThrow(new UsageError(message));
  });

  it('evaluates where the watcher did, at the recorded times', () => {
    const events = parseRecording(
      [
        line({ type: 'installed', resource: 'clusteroperators', version: 'v1' }),
        line({ type: 'replace', resource: 'clusteroperators', objects: [co('False')] }),
        line({ type: 'evaluate' }),
        JSON.stringify({
          at: '2026-03-01T10:05:00.000Z',
          type: 'upsert',
          resource: 'clusteroperators',
          object: co('True'),
        }),
      ].join('\n'),
      'rec.jsonl',
    );
    const atEvaluation = replay(events.slice(0, 3), EMPTY_CONTEXT).findings.filter((f) => f.component === 'operators');
    expect(atEvaluation).toEqual([
      {
        component: 'operators',
        object: 'ClusterOperator dns',
        severity: 'error',
        reason: 'not Available',
        since: '2026-03-01T10:00:00.000Z',
      },
    ]);
    expect(replay(events, EMPTY_CONTEXT).findings.filter((f) => f.component === 'operators')).toEqual([]);
  });
});
