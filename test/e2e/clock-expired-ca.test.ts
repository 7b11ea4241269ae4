// A node whose RTC is six months behind (qemu -rtc base=) gets a stick the factory signed five
// months ago, when its admin client CA (an RSA root made by `openssl ca`) was still valid; the CA
// expired four months ago. On the node's clock the CA is valid, so admission passes it; the
// signature is newer than that clock, so the clock is known wrong and the clock step waits for
// chronyd (a real time server on the site network, as in clock.test.ts). Once chronyd has stepped
// the clock to the true time, every certificate admission passed is judged again: the run is
// refused at the clock step, naming the field and the CA's expiry, and kubelet stays behind its gate.
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admitSite, offNode } from '../../src/config/admit.js';
import { KUBELET_UNIT } from '../../src/steps/kubelet.js';
import { sealAndSign } from '../../src/trust/seal-folder.js';
import { readPrivateKey, SIGNATURE_FILE } from '../../src/trust/signature.js';
import { datedCa } from '../certs/openssl-cas.js';
import { enableUnit, installFiles } from './disk.js';
import { AGENT_UNIT, buildNodeImage, ensureAgentBuild, type NodeImage } from './node-image.js';
import { announceSkip, MIN, skipVm, waitAgentExited } from './scenario.js';
import { newSecret, siteConfigYaml, siteSpec, STICK_LABEL } from './sites.js';
import { makeStick } from './stick.js';
import { startTimeServer, type TimeServer } from './time-server.js';
import { bootVm, type Vm } from './vm.js';

announceSkip('clock: a CA that expired while the RTC lagged');

const DAY_MS = 86_400_000;
const TRUST_ANCHOR = '/etc/sno-relocate/trust/factory.pub';
const exec = promisify(execFile);
const stamp = (days: number) => new Date(Date.now() + days * DAY_MS).toISOString().replace(/[-:T]|\.\d+/g, '');

describe.skipIf(skipVm)('an RTC six months behind and a CA that expired four months ago', () => {
  let image: NodeImage | undefined;
  let server: TimeServer | undefined;
  let vm: Vm | undefined;
  let dir = '';

  beforeAll(async () => {
    image = await buildNodeImage();
    dir = await mkdtemp(join(tmpdir(), 'sno-e2e-clock-ca-'));
    server = await startTimeServer();
    const agent = await ensureAgentBuild();
    await exec(agent, ['keygen', '--out', join(dir, 'factory')]);
    await installFiles(image.disk, [
      { path: TRUST_ANCHOR, mode: 0o644, contents: await readFile(join(dir, 'factory.pub')) },
    ]);
    await enableUnit(image.disk, 'chronyd.service');
  }, 15 * MIN);

  afterAll(async () => {
    await vm?.collectArtifacts().catch((e: Error) => console.log(`artifacts: ${e.message}`));
    await vm?.dispose();
    await server?.stop();
    await image?.dispose();
    if (dir) await rm(dir, { recursive: true, force: true });
  }, 5 * MIN);

  it(
    'admission passes it on the lagging clock; after the sync the clock step refuses, naming it',
    async () => {
      const ca = datedCa(join(dir, 'ca'), 'store42-admin-ca', stamp(-500), stamp(-120));
      const expiry = new Date(Date.now() - 120 * DAY_MS).toISOString().slice(0, 10);
      const spec = {
        ...siteSpec(newSecret()),
        chronyConfig: `${server!.serverLine}\n`,
        access: { clientCAFile: 'client-ca.crt' },
      };
      // signed at the factory five months ago with the agent's own signing, the CA valid then
      const folder = join(dir, 'signed');
      await mkdir(folder);
      const files = [
        { name: 'site-config.yaml', contents: siteConfigYaml(spec) },
        { name: 'client-ca.crt', contents: await readFile(ca.crt, 'utf8') },
      ];
      for (const f of files) await writeFile(join(folder, f.name), f.contents);
      const signedAt = new Date(Date.now() - 150 * DAY_MS);
      const key = readPrivateKey(await readFile(join(dir, 'factory.key'), 'utf8'), 'factory.key');
      const { doc } = await sealAndSign(key, await admitSite(folder, offNode(signedAt)), { now: signedAt });
      const stick = await makeStick({
        dir,
        fileName: 'site.img',
        label: STICK_LABEL,
        files: [...files, { name: SIGNATURE_FILE, contents: `${JSON.stringify(doc, null, 2)}\n` }],
      });
      const rtc = new Date(Date.now() - 182 * DAY_MS).toISOString().slice(0, 19);
      vm = await bootVm({
        name: 'clock-expired-ca',
        disk: image!.disk,
        sticks: [stick],
        uplinkToHost: true,
        qemuArgs: ['-rtc', `base=${rtc}`],
      });
      await vm.waitSsh();
      await waitAgentExited(vm, '3/', 10 * MIN);
      const journal = await vm.sshOk(`journalctl -b 0 -u ${AGENT_UNIT} -o cat --no-pager`);
      // admission on the RTC's time: nothing said against the CA, the clock known wrong
      expect(journal.slice(0, journal.indexOf('[clock]'))).not.toMatch(/clientCAFile/);
      expect(journal).toContain('[clock] wait up to 60s for chronyd to synchronise the clock, then judge time again');
      expect(journal).toMatch(/\[clock\] clock synchronised by chronyd/);
      expect(journal).toMatch(
        new RegExp(
          `site-config refused, judged again on the clock chronyd synchronised \\([^)]+\\): \\$\\.spec\\.access\\.clientCAFile: CN=store42-admin-ca expired on ${expiry}`,
        ),
      );
      // refused before the gate: kubelet never started
      expect((await vm.ssh(`systemctl is-active ${KUBELET_UNIT}`)).stdout.trim()).toBe('inactive');
      expect((await vm.ssh('test -e /var/lib/sno-relocate/kubelet-gate')).code).not.toBe(0);
    },
    20 * MIN,
  );
});
