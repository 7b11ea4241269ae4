import { describe, expect, it } from 'vitest';
import { testSite } from '../../test/node/context.js';
import type { PlanResult } from '../engine/step.js';
import { type RegistryCheckView, registryCheckStep } from './registry-check.js';

describe('registry-check decisions, on plain views', () => {
  const passed =
    "5 of 5 images served by the site's registries (payload 2, platform 1, catalog 1, workload 1) in 1.2 s";
  const missing = 'registry.example.com/shop/web@sha256:1 is missing (asked mirror.example.com/shop/web@sha256:1)';
  it.each<[string, RegistryCheckView, PlanResult<never>]>([
    [
      'nothing to check',
      { kind: 'nothing' },
      { action: 'noop', reason: 'the site-config changes neither the pull secret nor the mirrors' },
    ],
    [
      'skipped',
      { kind: 'skipped', images: 1180 },
      {
        action: 'noop',
        reason:
          "skipped (spec.registryCheck: skip): 1,180 images (release payload, pods, catalogs) not checked against the site's registries",
      },
    ],
    ['every image served', { kind: 'checked', verdict: { passed, warnings: [] } }, { action: 'noop', reason: passed }],
    [
      'a workload image missing',
      { kind: 'checked', verdict: { passed, warnings: [missing] } },
      { action: 'noop', reason: `${passed}; warning: ${missing}`, warnings: [missing] },
    ],
    [
      'a platform image missing',
      { kind: 'checked', verdict: { refused: `1 image the control plane or platform needs: ${missing}` } },
      { action: 'conflict', reason: `1 image the control plane or platform needs: ${missing}` },
    ],
  ])('%s: never a change', (_, view, expected) => {
    expect(registryCheckStep.plan(view, testSite())).toEqual(expected);
  });
});
