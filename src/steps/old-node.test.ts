import { describe, expect, it } from 'vitest';
import { testSite } from '../../test/node/context.js';
import { oldNodeStep } from './old-node.js';

describe('old-node decisions', () => {
  const MACHINE = '3f1c0b9e8a7d4c2b9e1f0a2b3c4d5e6f';
  const UUID = '4c4c4544-0042-3510-8058-b4c04f4e3332';
  const node = (name: string, nodeInfo: { machineID?: string; systemUUID?: string }) => ({
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name },
    status: { nodeInfo },
  });
  const me = { machineID: MACHINE, systemUUID: UUID };
  it.each([
    ['only this Node', me, [node('store-42', { machineID: MACHINE })], 'noop', []],
    [
      'the factory Node by machine-id',
      me,
      [node('store-42', {}), node('factory-7', { machineID: MACHINE })],
      'change',
      ['Node factory-7'],
    ],
    [
      'the factory Node by system UUID, upper case',
      me,
      [node('factory-7', { systemUUID: UUID.toUpperCase() })],
      'change',
      ['Node factory-7'],
    ],
    ["another machine's Node", me, [node('other', { machineID: 'ffff', systemUUID: 'eeee' })], 'noop', []],
    ['no identity to know it by', {}, [node('factory-7', { machineID: MACHINE })], 'noop', []],
  ] as const)('%s', (_, identity, nodes, action, targets) => {
    const plan = oldNodeStep.plan({ name: 'store-42', me: identity, nodes: [...nodes] }, testSite());
    expect(plan.action).toBe(action);
    expect(plan.action === 'change' ? plan.changes.map((c) => c.target) : []).toEqual(targets);
  });
});
