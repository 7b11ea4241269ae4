// A node that wakes up with a wrong clock: the guest's RTC six months ahead, then six months behind
// (qemu -rtc base=), and a real time server on the site network (chronyd on the host, serving its
// clock without touching it, which the guest reaches at the gateway address). The site's
// chrony.conf names that server; chronyd runs from boot, unsynchronised until then. Ahead, the
// stick's signature (valid for 30 more days) looks expired: admission defers it, the clock step
// waits for chronyd, steps the clock and judges it again. Behind, the clock is before the agent's
// lower bound (the signature's signing time): known wrong until the sync. In both the node ends
// relocated, on the true time. The boot's run goes on past the kubelet gate to the domain step, the
// one that issues certificates, against a test cluster's real kube-apiserver on the host (the
// node's kubeconfig names it, relayed by qemu): the site CA it keeps on the node's disk and the
// serving certificates it writes into Secrets are checked by the host's openssl on the host's
// clock, the true time: valid now, and backdated by one hour from the corrected clock, not the RTC's.
// Last, a node shelved past its power-on-by date (the shipment record factory seal left says when
// its certificates expired): with the RTC six months behind its clock would let it through, but the
// stick's signing time proves that date passed, so the stick is refused at admission with nothing
// on the host changed, and the console says why.
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import { promisify } from 'node:util';
import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { caPaths } from '../../src/certs/site-certs.js';
import { NODE_KUBECONFIG } from '../../src/cli/runtime.js';
import { CONFIG_NAMESPACE, MANAGED_BY, MANAGED_BY_LABEL, ROUTER_NAMESPACE } from '../../src/kube/openshift.js';
import { startFactory, STATE_DIR, type ClusterEnv } from '../cluster/env.js';
import { enableUnit, installFiles } from './disk.js';
import { guestApiForward, guestKubeconfig } from './guest-api.js';
import { AGENT_UNIT, buildNodeImage, ensureAgentBuild, nodeOnlyDropIn, type NodeImage } from './node-image.js';
import { expectRefusedUnchanged } from './journey.js';
import { waitEvent } from './node-checks.js';
import {
  announceSkip,
  expectNodeHeld,
  expectSiteNetwork,
  MIN,
  recordTimings,
  skipVm,
  waitAgentSucceeded,
  waitKubeletActive,
} from './scenario.js';
import { newSecret, SITE_HOSTNAME, siteSpec, signedSiteStick } from './sites.js';
import { startTimeServer, type TimeServer } from './time-server.js';
import { bootVm, type Vm } from './vm.js';

announceSkip('clock scenarios');

const DAY_MS = 86_400_000;
const SHIFT_DAYS = 182;
const TRUST_ANCHOR = '/etc/sno-relocate/trust/factory.pub';
const kubeSkipped = process.env.SNO_RELOCATE_SKIP_KUBE === '1';
/** the agent's certificates start this long before they are issued (docs/clock-and-shelf-life.md) */
const BACKDATE_MS = 60 * MIN;
/** how far the guest's synchronised clock may be from the host's (checked below) */
const SKEW_MS = 60_000;
const exec = promisify(execFile);

describe.skipIf(skipVm)('a wrong clock at power-on, a time server at the site', () => {
  let env: ClusterEnv | undefined;
  let image: NodeImage | undefined;
  let server: TimeServer | undefined;
  let dir = '';
  let stick = '';
  const vms: Vm[] = [];

  beforeAll(async () => {
    if (!kubeSkipped) env = await startFactory();
    image = await buildNodeImage();
    dir = await mkdtemp(join(tmpdir(), 'sno-e2e-clock-'));
    server = await startTimeServer();
    const agent = await ensureAgentBuild();
    await exec(agent, ['keygen', '--out', join(dir, 'factory')]);
    await installFiles(image.disk, [
      { path: TRUST_ANCHOR, mode: 0o644, contents: await readFile(join(dir, 'factory.pub')) },
      // the node's kubeconfig names the test cluster; the run goes on to the domain step
      ...(env
        ? [
            { path: NODE_KUBECONFIG, mode: 0o600, contents: guestKubeconfig(env) },
            nodeOnlyDropIn(image.payload, 'node,domain'),
          ]
        : []),
    ]);
    // chronyd runs from boot, as on RHCOS, with the factory's chrony.conf (sources it cannot reach)
    await enableUnit(image.disk, 'chronyd.service');
    const spec = { ...siteSpec(newSecret()), chronyConfig: `${server.serverLine}\n` };
    stick = await signedSiteStick(
      dir,
      'site.img',
      spec,
      agent,
      join(dir, 'factory.key'),
      new Date(Date.now() + 30 * DAY_MS),
    );
  }, 15 * MIN);

  afterAll(async () => {
    for (const v of vms) {
      await v.collectArtifacts().catch((e: Error) => console.log(`artifacts: ${e.message}`));
      await v.dispose();
    }
    await server?.stop();
    await image?.dispose();
    await env?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  }, 5 * MIN);

  /** Boots with the RTC `days` off, waits for the relocation, checks the clock; returns the agent's journal. */
  const relocate = async (name: string, days: number): Promise<string> => {
    const started = performance.now();
    const bootAt = Date.now();
    const rtc = new Date(Date.now() + days * DAY_MS).toISOString().slice(0, 19);
    const v = await bootVm({
      name,
      disk: image!.disk,
      sticks: [stick],
      uplinkToHost: true,
      ...(env && { hostForwards: [guestApiForward(env)] }),
      qemuArgs: ['-rtc', `base=${rtc}`],
    });
    vms.push(v);
    await v.waitSsh();
    await waitKubeletActive(v);
    await waitAgentSucceeded(v, 10 * MIN);
    await recordTimings(name, { bootToDoneMs: Math.round(performance.now() - started) });
    await expectSiteNetwork(v);
    expect(await v.sshOk('hostnamectl hostname')).toBe(`${SITE_HOSTNAME}\n`);
    // the node's clock is the true time now (the host's): within a minute of it
    const guestNow = Number((await v.sshOk('date +%s')).trim()) * 1000;
    expect(Math.abs(guestNow - Date.now())).toBeLessThan(SKEW_MS);
    expect(await v.sshOk('chronyc -n tracking')).toMatch(/^Leap status\s*:\s*Normal$/m);
    const journal = await v.sshOk(`journalctl -b 0 -u ${AGENT_UNIT} -o cat --no-pager`);
    const siteCa = env && (await v.sshOk(`cat ${caPaths(STATE_DIR).cert}`));
    // the stick is released for the next boot, the artifacts kept
    await v.collectArtifacts();
    await v.dispose();
    vms.splice(vms.indexOf(v), 1);
    // the clock step waited for chronyd, which stepped the clock back by the RTC's error
    expect(journal).toContain('[clock] wait up to 60s for chronyd to synchronise the clock, then judge time again');
    const step = Number(/\[clock\] clock synchronised by chronyd: \S+ stepSeconds=(-?\d+)/.exec(journal)?.[1]);
    expect(Math.abs(step + days * 86_400)).toBeLessThan(600);
    expect(journal).toContain('[clock] time judged on the clock chronyd synchronised');
    if (siteCa) await expectIssuedOnTrueTime(name, journal, siteCa, bootAt);
    return journal;
  };

  /**
   * Every certificate the boot's run issued, where the agent wrote it: the site CA on the node's
   * disk and the serving certificates in the cluster's Secrets, each of which the journal says this
   * run wrote (its serial). The host's openssl judges them on the host's clock, the true time: each
   * verifies (signed by the site CA, valid now), and starts one hour before a moment of this boot
   * on the corrected clock. Issued on the RTC's time, a certificate from the clock ahead is not yet
   * valid (verify, and the upper bound below); one from the clock behind verifies (825 days of
   * validity outlast six months) but starts six months early (the lower bound).
   */
  const expectIssuedOnTrueTime = async (name: string, journal: string, siteCa: string, bootAt: number) => {
    const synced = journal.indexOf('[clock] clock synchronised by chronyd');
    expect(journal.indexOf('[domain] site CA created')).toBeGreaterThan(synced);
    const written = new Map(
      [...journal.matchAll(/\[domain\] secret (\S+) written .* serial=([0-9A-F]+)/g)].map((m) => {
        expect(m.index).toBeGreaterThan(synced);
        return [m[1]!, m[2]!];
      }),
    );
    // the kube-apiserver's model restarts it for the named certificate: read once it is back
    await env!.models!.settled();
    const core = env!.cluster.kubeConfig().makeApiClient(CoreV1Api);
    const secrets = (
      await Promise.all(
        [CONFIG_NAMESPACE, ROUTER_NAMESPACE].map((namespace) =>
          core.listNamespacedSecret({ namespace, labelSelector: `${MANAGED_BY_LABEL}=${MANAGED_BY}` }),
        ),
      )
    ).flatMap((l) => l.items.filter((s) => s.type === 'kubernetes.io/tls'));
    // the router's, and one each for the console, downloads, OAuth and API hosts
    expect(secrets.map((s) => s.metadata!.name).sort()).toEqual([...written.keys()].sort());
    expect(written.size).toBe(5);
    const ca = join(dir, `${name}-site-ca.crt`);
    await writeFile(ca, siteCa);
    const files = [ca];
    for (const s of secrets) {
      const file = join(dir, `${name}-${s.metadata!.name}.crt`);
      await writeFile(file, Buffer.from(s.data!['tls.crt']!, 'base64'));
      expect((await exec('openssl', ['x509', '-noout', '-serial', '-in', file])).stdout).toBe(
        `serial=${written.get(s.metadata!.name!)}\n`,
      );
      files.push(file);
    }
    const checkedAt = Date.now();
    for (const file of files) {
      // on the host's clock: the chain up to the site CA, each certificate within its validity
      expect((await exec('openssl', ['verify', '-CAfile', ca, file])).stdout).toBe(`${file}: OK\n`);
      expect((await exec('openssl', ['x509', '-noout', '-checkend', '0', '-in', file])).stdout).toBe(
        'Certificate will not expire\n',
      );
      const dates = (await exec('openssl', ['x509', '-noout', '-startdate', '-enddate', '-in', file])).stdout;
      const notBefore = Date.parse(/^notBefore=(.+)$/m.exec(dates)![1]!);
      // issued between the boot and now on the true time (give or take the guest's skew), backdated
      expect(notBefore + BACKDATE_MS, `${file}: ${dates}`).toBeGreaterThanOrEqual(bootAt - SKEW_MS);
      expect(notBefore + BACKDATE_MS, `${file}: ${dates}`).toBeLessThanOrEqual(checkedAt + SKEW_MS);
    }
  };

  it(
    'RTC six months ahead: the signature looks expired, is judged again after the sync and accepted',
    async () => {
      const journal = await relocate('clock-ahead', SHIFT_DAYS);
      expect(journal).toMatch(
        /WARN {2}site-config signature expired on \S+ on the node's clock, which chronyd has not synchronised: judged again once it has/,
      );
      expect(journal).toContain(
        '[clock] site-config.sig: valid on the clock chronyd synchronised, judged again after the clock sync',
      );
    },
    15 * MIN,
  );

  it(
    'RTC six months behind: the clock is known wrong until the sync, then the run completes',
    async () => {
      const journal = await relocate('clock-behind', -SHIFT_DAYS);
      expect(journal).not.toMatch(/refused/);
    },
    15 * MIN,
  );

  it(
    'a shipment past its power-on-by date: refused at admission on the signing time, nothing on the host changed',
    async () => {
      const started = performance.now();
      const signed = Date.now();
      // what factory seal left: sealed 40 days ago, its signer certificate expired yesterday
      const shipment = {
        shippedAt: new Date(signed - 40 * DAY_MS).toISOString(),
        shelfDays: 20,
        warnings: [],
        powerOnBy: {
          date: new Date(signed - 8 * DAY_MS).toISOString(),
          expiry: new Date(signed - DAY_MS).toISOString(),
          certificate: 'Secret openshift-kube-apiserver-operator/kube-apiserver-to-kubelet-signer',
        },
      };
      await installFiles(image!.disk, [
        { path: posix.join(STATE_DIR, 'shipment.json'), mode: 0o600, contents: JSON.stringify(shipment) },
      ]);
      // six months behind, the node's clock is before the expiry; chronyd reaches no time server
      const rtc = new Date(signed - SHIFT_DAYS * DAY_MS).toISOString().slice(0, 19);
      const v = await bootVm({ name: 'clock-power-on-by', disk: image!.disk, qemuArgs: ['-rtc', `base=${rtc}`] });
      vms.push(v);
      await v.waitSsh();
      await waitEvent(v, 'configWaiting', { timeoutMs: 5 * MIN });
      const hostname = await v.sshOk('hostnamectl hostname');
      const journal = await expectRefusedUnchanged(v, stick);
      await recordTimings('clock-power-on-by', { bootToRefusedMs: Math.round(performance.now() - started) });
      const expiry = shipment.powerOnBy.expiry;
      const reason = new RegExp(
        `site-config refused: the true time is no earlier than the site-config signature \\(signedAt\\) \\(\\S+\\), and by then the node stayed off past its power-on-by date ${shipment.powerOnBy.date.slice(0, 10)}: ${shipment.powerOnBy.certificate} expired on ${expiry.replace(/[.]/g, '\\.')} .*; nothing on the host was changed`,
      );
      expect(journal).toMatch(reason);
      // on the technician's console, as the agent wrote it
      expect(await v.serialText()).toMatch(new RegExp(`sno-relocate: ${reason.source}`));
      // the clock was not touched: still six months behind
      expect(Number((await v.sshOk('date +%s')).trim()) * 1000).toBeLessThan(signed - 100 * DAY_MS);
      await expectNodeHeld(v, hostname);
    },
    15 * MIN,
  );
});
