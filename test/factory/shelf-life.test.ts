/**
 * The shelf life `factory check` gives a real cluster's certificates: the TLS secrets and CA
 * bundles of origin's registry (test/fixtures/origin-tls-registry.ts: names, namespaces, the
 * auto-regenerate mark and the validity periods upstream gives them), seeded on a real
 * kube-apiserver as an installation leaves them a day after it, and the static pods' copies on the
 * node. What the cluster marks is regenerated at start, so the power-on-by date of a 90-day shelf
 * follows from what nothing renews: an application's 30-day certificate when there is one, else a
 * certificate most of a year off, never the 30-day control-plane certificates that regenerate.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { issue, newKey } from '../../src/certs/issue.js';
import { AUTO_REGENERATE_ANNOTATION, POWER_ON_MARGIN_DAYS } from '../../src/factory/certificates.js';
import type { CheckReport } from '../../src/factory/check.js';
import { startFactory, type ClusterEnv } from '../cluster/env.js';
import { ORIGIN_TLS_REGISTRY, REGENERATED_MARK, STATIC_POD_COPIES } from '../fixtures/origin-tls-registry.js';
import { runAgent } from '../node/cli.js';

const kubeSkipped = process.env.SNO_RELOCATE_SKIP_KUBE === '1';
const DAY_MS = 86_400_000;
/** the installation, a day before the check */
const INSTALLED = new Date(Date.now() - DAY_MS);
const APP = 'Secret shop-app/storefront-tls';

const b64 = (text: string) => Buffer.from(text).toString('base64');
const certificate = (cn: string, days: number) =>
  issue({ commonName: cn, notBefore: INSTALLED, validityDays: days }, newKey());
const dateLess = (notAfter: string, days: number) => new Date(Date.parse(notAfter) - days * DAY_MS).toISOString();

describe.skipIf(kubeSkipped)('the shelf life of a cluster as origin registers its certificates', () => {
  let env: ClusterEnv;
  let root: string;
  let core: CoreV1Api;
  const args = () => ['--shelf-days', '90', '--root', root, '--kubeconfig', env.cluster.kubeconfigPath];
  const check = () => {
    const r = runAgent(['factory', 'check', ...args(), '-o', 'json'], {});
    expect(r.stdout, r.stderr).not.toBe('');
    return JSON.parse(r.stdout) as CheckReport;
  };
  const fate = (report: CheckReport, source: string) => report.certificates.find((c) => c.source === source);

  beforeAll(async () => {
    env = await startFactory({ models: false, seed: { csrs: false } });
    core = env.cluster.kubeConfig().makeApiClient(CoreV1Api);
    root = mkdtempSync(path.join(tmpdir(), 'shelf-life-'));
    const namespaces = new Set([...ORIGIN_TLS_REGISTRY.map((e) => e.namespace), 'shop-app']);
    const existing = new Set((await core.listNamespace()).items.map((n) => n.metadata!.name));
    for (const name of namespaces)
      if (!existing.has(name)) await core.createNamespace({ body: { metadata: { name } } });
    const pems = new Map<string, string>();
    for (const e of ORIGIN_TLS_REGISTRY) {
      const pem = await certificate(e.name, e.validityDays);
      pems.set(`${e.namespace}/${e.name}`, pem);
      const metadata = {
        name: e.name,
        namespace: e.namespace,
        ...(e.marked && { annotations: { [AUTO_REGENERATE_ANNOTATION]: REGENERATED_MARK } }),
      };
      if (e.kind === 'Secret')
        await core.createNamespacedSecret({
          namespace: e.namespace,
          body: { metadata, type: 'kubernetes.io/tls', data: { 'tls.crt': b64(pem), 'tls.key': b64('unused') } },
        });
      else
        await core.createNamespacedConfigMap({
          namespace: e.namespace,
          body: { metadata, data: { 'ca-bundle.crt': pem } },
        });
    }
    for (const copy of STATIC_POD_COPIES) {
      mkdirSync(path.dirname(path.join(root, copy.file)), { recursive: true });
      writeFileSync(path.join(root, copy.file), pems.get(copy.of)!);
    }
  }, 240_000);
  afterAll(async () => env?.stop());

  it('without an application certificate: the marked 30-day certificates regenerate, and the power-on-by date is most of a year off', () => {
    const report = check();
    for (const e of ORIGIN_TLS_REGISTRY.filter((x) => x.marked && x.validityDays < 90)) {
      const source = `${e.kind} ${e.namespace}/${e.name}`;
      expect(fate(report, source), source).toMatchObject({ expiredOnArrival: true, fate: 'regenerated at start' });
    }
    for (const copy of STATIC_POD_COPIES)
      expect(fate(report, copy.file), copy.file).toMatchObject({
        expiredOnArrival: true,
        fate: 'regenerated at start',
      });
    expect(report.certificates.filter((c) => c.fate === 'needs a person')).toEqual([]);
    expect(report.checks.find((c) => c.check === 'certificates')?.verdict).toBe('ok');
    // the earliest certificate nothing renews sets the date: a year or more off, none of the marked ones
    const unrenewed = report.certificates
      .filter((c) => c.whenExpired === 'needs a person')
      .sort((a, b) => Date.parse(a.notAfter) - Date.parse(b.notAfter));
    expect(report.powerOnBy).toMatchObject({
      expiry: unrenewed[0]!.notAfter,
      date: dateLess(unrenewed[0]!.notAfter, POWER_ON_MARGIN_DAYS),
    });
    expect(Date.parse(report.powerOnBy!.date) - INSTALLED.getTime()).toBeGreaterThan(300 * DAY_MS);
    const marked = ORIGIN_TLS_REGISTRY.filter((e) => e.marked).map((e) => `${e.kind} ${e.namespace}/${e.name}`);
    expect(marked).not.toContain(unrenewed[0]!.source);
    // origin's unmarked two-year and five-year certificates are among what nobody renews, valid on arrival
    expect(fate(report, 'Secret openshift-monitoring/prometheus-k8s-tls')).toMatchObject({
      fate: 'valid',
      whenExpired: 'needs a person',
    });
  });

  it("an application's 30-day certificate without the mark still counts: it sets the date, and the node is not fit", async () => {
    const pem = await certificate('shop.example.net', 30);
    await core.createNamespacedSecret({
      namespace: 'shop-app',
      body: {
        metadata: { name: 'storefront-tls' },
        type: 'kubernetes.io/tls',
        data: { 'tls.crt': b64(pem), 'tls.key': b64('unused') },
      },
    });
    const report = check();
    const app = fate(report, APP)!;
    expect(app).toMatchObject({ expiredOnArrival: true, fate: 'needs a person' });
    expect(report.certificates.filter((c) => c.fate === 'needs a person').map((c) => c.source)).toEqual([APP]);
    expect(report.powerOnBy).toEqual({
      date: dateLess(app.notAfter, POWER_ON_MARGIN_DAYS),
      expiry: app.notAfter,
      certificate: `${APP} (CN=shop.example.net)`,
    });
    expect(report.checks.find((c) => c.check === 'certificates')).toMatchObject({ verdict: 'fail' });
    const text = runAgent(['factory', 'check', ...args()], {}).stdout;
    expect(text).toContain(`power on by ${report.powerOnBy!.date.slice(0, 10)}: ${APP} (CN=shop.example.net)`);
  });
});
