import { describe, expect, it } from 'vitest';
import { ObjectStore } from '../store.js';
import { runChecks, worthKeeping } from './index.js';
import { EMPTY_CONTEXT, type WatchedObject } from '../model.js';

const csv = (name: string, phase: string): WatchedObject => ({
  metadata: { name, namespace: 'shop' },
  status: { phase, reason: phase === 'Failed' ? 'InstallCheckFailed' : 'InstallSucceeded' },
});

describe('what the watcher keeps', () => {
  it('drops an object its own check has nothing to say about, and keeps one it reports', () => {
    expect(worthKeeping('clusterserviceversions', csv('quiet.v1', 'Succeeded'))).toBe(false);
    expect(worthKeeping('clusterserviceversions', csv('broken.v1', 'Failed'))).toBe(true);
    expect(worthKeeping('installplans', { metadata: { name: 'done' }, status: { phase: 'Complete' } })).toBe(false);
    expect(worthKeeping('machines', { metadata: { name: 'm' }, status: { phase: 'Running' } })).toBe(false);
    expect(worthKeeping('machines', { metadata: { name: 'm' }, status: { phase: 'Provisioning' } })).toBe(true);
  });

  it('keeps every object of a kind another check reads, quiet or not', () => {
    // MachineOSConfigs are judged by their builds, Cluster API CRDs by ClusterAPI's config
    expect(worthKeeping('machineosbuilds', { metadata: { name: 'b' } })).toBe(true);
    expect(worthKeeping('crds', { metadata: { name: 'x.example.com' } })).toBe(true);
    expect(worthKeeping('catalogsources', { metadata: { name: 'c' } })).toBe(true);
  });

  it('finds the same in a store of the kept objects as in one of every object', () => {
    const objects = [csv('a.v1', 'Succeeded'), csv('b.v1', 'Failed'), csv('c.v1', 'Installing')];
    const all = new ObjectStore();
    const kept = new ObjectStore();
    all.apply({ type: 'replace', resource: 'clusterserviceversions', objects });
    kept.apply({
      type: 'replace',
      resource: 'clusterserviceversions',
      objects: objects.filter((o) => worthKeeping('clusterserviceversions', o)),
    });
    expect(kept.count()).toBe(2);
    expect(runChecks(kept, EMPTY_CONTEXT)).toEqual(runChecks(all, EMPTY_CONTEXT));
  });
});
