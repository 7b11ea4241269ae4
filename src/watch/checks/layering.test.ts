import { describe, expect, it } from 'vitest';
import type { WatchContext, WatchedObject } from '../model.js';
import { checkMachineOSConfig, checkPool, CURRENT_BUILD_ANNOTATION, MACHINE_OS_CONFIG_LABEL } from './layering.js';

const CTX: WatchContext = {
  siteRegistries: ['registry.store42.example.com:5000'],
  digestMirrorSources: [],
  tagMirrorSources: [],
  factoryRegistries: ['registry.factory.example.com:5000'],
};
const DIGEST = `@sha256:${'d'.repeat(64)}`;
const brief = (findings: { object: string; severity: string; reason: string; escalate?: unknown }[]) =>
  findings.map((f) => [f.object, f.severity, f.reason, f.escalate ? 'escalates' : '']);

const mosc = (push: string, pull?: string, build = 'worker-abc'): WatchedObject => ({
  metadata: { name: 'worker', annotations: { [CURRENT_BUILD_ANNOTATION]: build } },
  spec: { machineConfigPool: { name: 'worker' }, renderedImagePushSpec: push },
  status: { ...(pull && { currentImagePullSpec: pull }) },
});
const mosb = (conditions: Record<string, string>[], digested?: string): WatchedObject => ({
  metadata: { name: 'worker-abc' },
  status: { conditions, ...(digested && { digestedImagePushSpec: digested }) },
});
const SITE_IMAGE = 'registry.store42.example.com:5000/os/worker';
const OK = [{ type: 'Succeeded', status: 'True' }];

describe('MachineOSConfig', () => {
  it.each([
    [
      'built and rolled out on the site registry',
      mosc(`${SITE_IMAGE}:latest`, `${SITE_IMAGE}${DIGEST}`),
      [mosb(OK, `${SITE_IMAGE}${DIGEST}`)],
      [],
    ],
    [
      'in-cluster registry',
      mosc('image-registry.openshift-image-registry.svc:5000/openshift-machine-config-operator/os:latest'),
      [mosb(OK)],
      [],
    ],
    [
      'current image still on the factory registry',
      mosc(`${SITE_IMAGE}:latest`, `registry.factory.example.com:5000/os/worker${DIGEST}`),
      [mosb(OK, `registry.factory.example.com:5000/os/worker${DIGEST}`)],
      [
        [
          'MachineOSConfig worker',
          'error',
          `currentImagePullSpec still points at the factory registry (registry.factory.example.com:5000/os/worker${DIGEST})`,
          '',
        ],
      ],
    ],
    [
      'pushing to the factory registry',
      mosc('registry.factory.example.com:5000/os/worker:latest'),
      [mosb(OK)],
      [
        [
          'MachineOSConfig worker',
          'error',
          'renderedImagePushSpec still points at the factory registry (registry.factory.example.com:5000/os/worker:latest)',
          '',
        ],
      ],
    ],
    [
      'pushing somewhere the site does not mirror',
      mosc('quay.io/acme/os:latest'),
      [mosb(OK)],
      [
        [
          'MachineOSConfig worker',
          'warning',
          'renderedImagePushSpec is on a registry the site does not mirror (quay.io/acme/os:latest)',
          '',
        ],
      ],
    ],
    [
      'build failed',
      mosc(`${SITE_IMAGE}:latest`),
      [mosb([{ type: 'Failed', status: 'True', reason: 'BuildFailed', message: 'push denied' }])],
      [['MachineOSBuild worker-abc', 'error', 'Failed: BuildFailed: push denied', '']],
    ],
    [
      'build interrupted',
      mosc(`${SITE_IMAGE}:latest`),
      [mosb([{ type: 'Interrupted', status: 'True' }])],
      [['MachineOSBuild worker-abc', 'error', 'Interrupted', '']],
    ],
    [
      'building',
      mosc(`${SITE_IMAGE}:latest`),
      [mosb([{ type: 'Building', status: 'True' }])],
      [['MachineOSBuild worker-abc', 'info', 'Building', 'escalates']],
    ],
    [
      'built, not rolled out',
      mosc(`${SITE_IMAGE}:latest`),
      [mosb(OK, `${SITE_IMAGE}${DIGEST}`)],
      [['MachineOSConfig worker', 'info', `built image ${SITE_IMAGE}${DIGEST} not rolled out yet`, 'escalates']],
    ],
    [
      'current build missing',
      mosc(`${SITE_IMAGE}:latest`),
      [],
      [['MachineOSConfig worker', 'warning', 'current MachineOSBuild worker-abc not found', 'escalates']],
    ],
  ])('%s', (_name, m, builds, expected) => {
    expect(brief(checkMachineOSConfig(CTX, m, builds))).toEqual(expected);
  });
});

describe('MachineOSConfig that names no current build yet', () => {
  const unnamed: WatchedObject = {
    metadata: { name: 'worker' },
    spec: { machineConfigPool: { name: 'worker' }, renderedImagePushSpec: `${SITE_IMAGE}:latest` },
  };
  const labelled = (name: string, created: string, conditions: Record<string, string>[], moscName = 'worker') => ({
    metadata: { name, creationTimestamp: created, labels: { [MACHINE_OS_CONFIG_LABEL]: moscName } },
    status: { conditions },
  });
  const FAILED = [{ type: 'Failed', status: 'True', reason: 'BuildFailed', message: 'push denied' }];

  it('reports its newest labelled build when that build failed', () => {
    const builds = [
      labelled('worker-old', '2026-01-01T00:00:00Z', OK),
      labelled('worker-new', '2026-01-02T00:00:00Z', FAILED),
    ];
    expect(brief(checkMachineOSConfig(CTX, unnamed, builds))).toEqual([
      ['MachineOSBuild worker-new', 'error', 'Failed: BuildFailed: push denied', ''],
    ]);
  });

  it('follows the newest build only: an older failure a newer build replaced is not reported', () => {
    const builds = [
      labelled('worker-old', '2026-01-01T00:00:00Z', FAILED),
      labelled('worker-new', '2026-01-02T00:00:00Z', [{ type: 'Building', status: 'True' }]),
    ];
    expect(brief(checkMachineOSConfig(CTX, unnamed, builds))).toEqual([
      ['MachineOSBuild worker-new', 'info', 'Building', 'escalates'],
    ]);
  });

  it("ignores another MachineOSConfig's builds", () => {
    const builds = [labelled('infra-1', '2026-01-02T00:00:00Z', FAILED, 'infra')];
    expect(brief(checkMachineOSConfig(CTX, unnamed, builds))).toEqual([]);
  });
});

describe('MachineConfigPool', () => {
  const pool = (conditions: Record<string, string>[]): WatchedObject => ({
    metadata: { name: 'master' },
    status: { conditions },
  });
  it.each([
    [
      'updated',
      pool([
        { type: 'Updated', status: 'True' },
        { type: 'Degraded', status: 'False' },
      ]),
      [],
    ],
    [
      'degraded alone',
      pool([{ type: 'Degraded', status: 'True', reason: 'X' }]),
      [['MachineConfigPool master', 'error', 'Degraded: X', '']],
    ],
    [
      'the aggregate is not repeated beside the specific cause',
      pool([
        { type: 'Degraded', status: 'True' },
        { type: 'ImageBuildDegraded', status: 'True', message: 'build failed' },
      ]),
      [['MachineConfigPool master', 'error', 'ImageBuildDegraded: build failed', '']],
    ],
    [
      'updating',
      pool([{ type: 'Updating', status: 'True' }]),
      [['MachineConfigPool master', 'info', 'Updating', 'escalates']],
    ],
  ])('%s', (_name, p, expected) => {
    expect(brief(checkPool(p))).toEqual(expected);
  });
});
