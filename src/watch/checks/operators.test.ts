import { describe, expect, it } from 'vitest';
import { checkClusterOperator } from './operators.js';

const co = (conditions: Record<string, string>[]) => ({ metadata: { name: 'dns' }, status: { conditions } });
const brief = (findings: { severity: string; reason: string; escalate?: unknown }[]) =>
  findings.map((f) => [f.severity, f.reason, f.escalate ? 'escalates' : '']);

describe('ClusterOperator', () => {
  it.each([
    [
      'available',
      co([
        { type: 'Available', status: 'True' },
        { type: 'Degraded', status: 'False' },
        { type: 'Progressing', status: 'False' },
      ]),
      [],
    ],
    [
      'not available',
      co([{ type: 'Available', status: 'False', reason: 'NoPods', message: 'no dns pods' }]),
      [['error', 'not Available: NoPods: no dns pods', '']],
    ],
    [
      'degraded',
      co([
        { type: 'Available', status: 'True' },
        { type: 'Degraded', status: 'True', reason: 'CertExpired' },
      ]),
      [['error', 'Degraded: CertExpired', '']],
    ],
    [
      'progressing',
      co([
        { type: 'Available', status: 'True' },
        { type: 'Progressing', status: 'True', reason: 'Rolling' },
      ]),
      [['info', 'Progressing: Rolling', 'escalates']],
    ],
    ['no conditions yet', co([]), [['warning', 'no Available condition reported yet', 'escalates']]],
  ])('%s', (_name, o, expected) => {
    expect(brief(checkClusterOperator(o))).toEqual(expected);
  });
});
