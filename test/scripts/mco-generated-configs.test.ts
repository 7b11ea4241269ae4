import { readFileSync } from 'node:fs';
import yaml from 'js-yaml';
import { describe, expect, it } from 'vitest';
import { formatDuration, yamlV2Less } from '../../scripts/mco-generated-configs.js';
import { CONFIG_RELEASE, openshiftConfigs, renderConfig } from '../e2e/mcd-model/install.js';

const KUBELET_CONF = '/etc/kubernetes/kubelet.conf';

describe("the MCO controllers' encoders, as the fixture script reproduces them", () => {
  it('formats durations as Go time.Duration.String does (go/src/time/time_test.go durationTests)', () => {
    const ns = 1;
    const us = 1e3;
    const ms = 1e6;
    const s = 1e9;
    const m = 60 * s;
    const h = 60 * m;
    expect(
      [
        0,
        ns,
        1100 * ns,
        2200 * us,
        3300 * ms,
        4 * m + 5 * s,
        4 * m + 5001 * ms,
        5 * h + 6 * m + 7001 * ms,
        8 * m + ns,
      ].map(formatDuration),
    ).toEqual(['0s', '1ns', '1.1µs', '2.2ms', '3.3s', '4m5s', '4m5.001s', '5h6m7.001s', '8m0.000000001s']);
  });

  it("orders keys as yaml.v2 does (gopkg.in/yaml.v2 encode_test.go TestSortedOutput's strings)", () => {
    const order = [
      '',
      '.1',
      '.2',
      '.a',
      '1',
      '2',
      'a!10',
      'a/0001',
      'a/002',
      'a/3',
      'a/10',
      'a/11',
      'a/0012',
      'a/100',
      'a~10',
      'ab/1',
      'b/1',
      'b/01',
      'b/2',
      'b/02',
      'b/3',
      'b/03',
      'b1',
      'b01',
      'b3',
      'c2.10',
      'c10.2',
      'd1',
      'd7',
      'd7abc',
      'd12',
      'd12a',
    ];
    expect([...order].reverse().sort(yamlV2Less)).toEqual(order);
  });
});

describe("the daemon model's rendered master config", () => {
  const fixture = JSON.parse(
    readFileSync(new URL('../e2e/mcd-model/openshift-master.json', import.meta.url), 'utf8'),
  ) as { releases: Record<string, { files: { path: string; machineConfig: string; contents?: string }[] }> };
  const entries = fixture.releases[CONFIG_RELEASE]!.files.filter((f) => f.path === KUBELET_CONF);

  it("declares the feature gate controller's kubelet.conf, not the template's", () => {
    expect(entries.map((f) => f.machineConfig)).toEqual([
      '01-master-kubelet',
      '97-master-generated-kubelet',
      '98-master-generated-kubelet',
    ]);
    const rendered = renderConfig('rendered-master', openshiftConfigs('{"auths":{}}'));
    const file = rendered.spec.config.storage?.files?.find((f) => f.path === KUBELET_CONF);
    const contents = decodeURIComponent(file?.contents?.source?.replace(/^data:,/, '') ?? '');
    expect(contents).toBe(entries[2]!.contents);
    const template = yaml.load(entries[0]!.contents!) as Record<string, unknown>;
    const generated = yaml.load(contents) as Record<string, unknown>;
    // every setting the template makes is kept; the gates are the release's whole Default set
    for (const key of Object.keys(template).filter((k) => k !== 'featureGates'))
      expect(generated[key], key).toBeDefined();
    expect(Object.keys(generated.featureGates as object).length).toBeGreaterThan(50);
    expect(generated.featureGates).toMatchObject({ OpenShiftPodSecurityAdmission: true, NodeSwap: false });
  });
});
