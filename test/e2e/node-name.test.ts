// The node keeps its Kubernetes name on a real node: OpenShift's kubelet.service, as the daemon's
// model lays it (test/e2e/mcd-model), runs a stand-in with kubelet's arguments, which names its
// node as kubelet does (EnvironmentFile=-/etc/kubernetes/kubelet-env,
// --hostname-override=${KUBELET_NODE_NAME}: machine-config-operator release-4.14..4.18
// templates/master/01-master-kubelet/_base/units/kubelet.service.yaml; kubelet takes the override
// when it is not empty, else the kernel's hostname lowercased). The factory's time server is on
// the test network, so kubelet-dependencies.target's chrony-wait.service returns at the first
// sync. The stick gives the site hostname: the OS hostname changes, kubelet registers under the
// factory name, and the machine-config daemon's model (test/e2e/mcd-model), whose rendered config
// carries this kubelet unit, finds no drift; after a reboot without the stick, the same. Then, in
// the same boot, a rename: the node's kubeconfig reaches a real kube-apiserver on the host (the
// factory cluster's Node under the node's factory name), `run --only node-rename` with
// spec.nodeName: rename finds nothing to refuse, stops the kubelet unit through systemd, clears
// the OVN databases and the ovnkube-node and multus certificates, copies the etcd certificate
// files, writes the new KUBELET_NODE_NAME and starts the unit, which registers under the new name;
// the host plays kubelet's requests for it (the client one as the former node), which the agent
// approves.
import { mkdtemp } from 'node:fs/promises';
import { CertificatesV1Api } from '@kubernetes/client-node';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NODE_KUBECONFIG } from '../../src/cli/runtime.js';
import { ETCD_CERTS_DIR, OFFLINE_CLEARED } from '../../src/node/rename.js';
import { startFactory, type ClusterEnv } from '../cluster/env.js';
import { createCsr, kubeletCsrSpecs } from '../kube/csr-requests.js';
import { KUBELET_UNIT as KUBELET } from '../../src/steps/kubelet.js';
import { guestApiForward, guestKubeconfig } from './guest-api.js';
import { AGENT_BINARY, AGENT_UNIT, buildNodeImage, type NodeImage } from './node-image.js';
import { announceSkip, endScenario, MIN, skipVm, waitAgentSucceeded, waitKubeletActive } from './scenario.js';
import { INTERNAL_IP, newSecret, SITE_HOSTNAME, siteConfigYaml, siteSpec, siteStick } from './sites.js';
import {
  installMcdModel,
  KUBELET_REGISTERED,
  mcdJournal,
  pullSecretJson,
  waitMcdStarted,
} from './mcd-model/install.js';
import { startTimeServer, type TimeServer } from './time-server.js';
import { bootVm, type Vm } from './vm.js';

announceSkip('node name scenarios');

const kubeSkipped = process.env.SNO_RELOCATE_SKIP_KUBE === '1';
const RENAME_CONFIG = '/var/tmp/rename-site-config.yaml';
/** the stand-in crictl's sandboxes: one file per transient unit */
const SANDBOXES = '/run/cri-sandboxes';
const CRICTL_STAND_IN = `#!/bin/sh
case "$1" in
  pods) ls ${SANDBOXES} ;;
  stopp) shift; for id; do systemctl stop "$id" && echo "Stopped sandbox $id"; done ;;
  rmp) shift; for id; do rm -f "${SANDBOXES}/$id" && echo "Removed sandbox $id"; done ;;
  *) echo "crictl stand-in: $*: not served" >&2; exit 1 ;;
esac
`;

/** the base image's static hostname (build-base.sh), the name the node was installed under */
const FACTORY_HOSTNAME = 'sno-factory';

describe.skipIf(skipVm)('the node name on a real node', () => {
  let image: NodeImage | undefined;
  let vm: Vm | undefined;
  let stickDir = '';
  let stick = '';
  let env: ClusterEnv | undefined;
  let timeServer: TimeServer | undefined;
  const timings: Record<string, number> = {};

  beforeAll(async () => {
    // the factory cluster, its Node named as the base image's hostname: the rename's preflight reads it
    if (!kubeSkipped) env = await startFactory({ models: false });
    image = await buildNodeImage();
    timeServer = await startTimeServer();
    await installMcdModel(image.disk, image.machineConfigs, pullSecretJson({}), 'release-4.18', timeServer);
    stickDir = await mkdtemp(join(tmpdir(), 'sno-e2e-node-name-'));
    stick = await siteStick(stickDir, 'site.img', siteSpec(newSecret()));
  }, 15 * MIN);

  afterAll(async () => {
    await endScenario(vm, image, stickDir, { scenario: 'node-name', timings });
    await env?.stop();
    await timeServer?.stop();
  }, 5 * MIN);

  const expectKeptName = async (v: Vm) => {
    expect(await v.sshOk('cat /etc/hostname')).toBe(`${SITE_HOSTNAME}\n`);
    expect(await v.sshOk('hostname')).toBe(`${SITE_HOSTNAME}\n`);
    expect(await v.sshOk('cat /etc/kubernetes/kubelet-env')).toBe(`KUBELET_NODE_NAME=${FACTORY_HOSTNAME}\n`);
    expect(await v.sshOk(`cat ${KUBELET_REGISTERED}`)).toBe(`${FACTORY_HOSTNAME}\n`);
    expect(await waitMcdStarted(v), await mcdJournal(v)).toMatchObject({
      state: 'Done',
      currentConfig: 'rendered-master-factory',
    });
  };

  it('changes the OS hostname; kubelet registers under the factory name, with no drift', async () => {
    vm = await bootVm({
      name: 'node-name-kept',
      disk: image!.disk,
      sticks: [stick],
      uplinkToHost: true,
      ...(env && { hostForwards: [guestApiForward(env)] }),
    });
    await vm.waitSsh();
    await waitKubeletActive(vm);
    await waitAgentSucceeded(vm);
    await expectKeptName(vm);
  });

  it('after a reboot without the stick: the same name, the same hostname', async () => {
    const v = vm!;
    await v.ssh('systemctl reboot');
    await v.waitGuestStopped(5 * MIN);
    await v.bootAgain({ sticks: [] });
    await v.waitSsh();
    await v.waitFor(`systemctl is-active ${KUBELET}`, (r) => r.stdout.trim() === 'active', 5 * MIN);
    await expectKeptName(v);
  });

  it.skipIf(kubeSkipped)(
    'renames on request: the files of the former name changed, kubelet restarted under the new one',
    async () => {
      const v = vm!;
      const kc = env!.cluster.kubeConfig();
      // at a site boot csr-approval, just before node-rename, approves the node's pending requests;
      // this run asks for node-rename alone, so the factory seed's are answered here (denied: the
      // test API issues no certificates), or the rename would wait them out
      const certificates = kc.makeApiClient(CertificatesV1Api);
      for (const csr of (await certificates.listCertificateSigningRequest()).items)
        if (!csr.status?.conditions?.length)
          await certificates.replaceCertificateSigningRequestApproval({
            name: csr.metadata!.name!,
            body: {
              ...csr,
              status: { conditions: [{ type: 'Denied', status: 'True', reason: 'Test', message: 'answered' }] },
            },
          });
      // the agent the boot started waits for an API that, until now, no node of this suite has
      await v.sshOk(`systemctl stop ${AGENT_UNIT}`);
      // what the factory install left that carries the name
      const former = `${ETCD_CERTS_DIR}/etcd-peer-${FACTORY_HOSTNAME}`;
      const [nb, sb, ovnCerts, multusCerts] = OFFLINE_CLEARED;
      await v.sshOk(
        [
          `mkdir -p ${ETCD_CERTS_DIR} ${ovnCerts} ${multusCerts}`,
          `printf 'peer certificate' >${former}.crt`,
          `printf 'peer key' >${former}.key && chmod 600 ${former}.key`,
          `printf 'zone ${FACTORY_HOSTNAME}' | tee ${nb} >${sb}`,
          `touch ${ovnCerts}/ovnkube-node-current.pem ${multusCerts}/multus-client-current.pem`,
          `mkdir -p ${posix.dirname(NODE_KUBECONFIG)}`,
        ].join(' && '),
      );
      // CRI-O's sandboxes as real processes that outlive kubelet's stop: ovnkube-node writing OVN's
      // databases by path (a write after their deletion would make them again), multus holding its
      // certificate open; crictl (CRI-O's client, absent from this guest) is a stand-in that stops
      // a sandbox by stopping its unit and waiting for it
      await v.sshOk(`cat >/usr/local/bin/crictl && chmod 755 /usr/local/bin/crictl && mkdir -p ${SANDBOXES}`, {
        input: CRICTL_STAND_IN,
      });
      const sandboxes = {
        'ovnkube-node': `while :; do echo x >>${nb}; echo x >>${sb}; sleep 0.1; done`,
        multus: `exec 3>>${multusCerts}/multus-client-current.pem; while :; do echo x >&3; sleep 0.1; done`,
      };
      for (const [name, script] of Object.entries(sandboxes))
        await v.sshOk(`systemd-run --unit=sandbox-${name} sh -c '${script}' && touch ${SANDBOXES}/sandbox-${name}`);
      await v.sshOk(`cat >${NODE_KUBECONFIG}`, { input: guestKubeconfig(env!) });
      await v.sshOk(`cat >${RENAME_CONFIG}`, {
        input: siteConfigYaml({ ...siteSpec(newSecret()), nodeName: 'rename' }),
      });
      const invocation = () => v.sshOk(`systemctl show -P InvocationID ${KUBELET}`);
      const before = await invocation();
      const started = performance.now();
      const run = v.ssh(`${AGENT_BINARY} run --only node-rename ${RENAME_CONFIG}`, { timeoutMs: 10 * MIN });

      // kubelet, restarted under the new name with its certificate of the former, asks as the former node
      const ended = await Promise.race([
        v.waitFor(`cat ${KUBELET_REGISTERED}`, (r) => r.stdout === `${SITE_HOSTNAME}\n`, 5 * MIN).then(() => undefined),
        run,
      ]);
      if (ended)
        throw new Error(`the agent ended before kubelet restarted: exit ${ended.code}\n${ended.stdout}${ended.stderr}`);
      const { client, serving } = kubeletCsrSpecs(SITE_HOSTNAME, INTERNAL_IP.split('/')[0]!, 'renamed');
      const approved = async (name: string) =>
        (await kc.makeApiClient(CertificatesV1Api).readCertificateSigningRequest({ name })).status?.conditions?.some(
          (c) => c.type === 'Approved',
        ) ?? false;
      await createCsr(kc, { ...client, as: { user: `system:node:${FACTORY_HOSTNAME}`, group: 'system:nodes' } });
      const result = await Promise.race([
        run,
        (async () => {
          // polled: the agent approves from the guest, nothing here to await on
          while (!(await approved(client.name))) await new Promise((r) => setTimeout(r, 500));
          await createCsr(kc, serving);
          return run;
        })(),
      ]);
      timings.renameMs = Math.round(performance.now() - started);
      expect(result.code, `${result.stdout}\n${result.stderr}`).toBe(0);
      expect(await approved(serving.name)).toBe(true);

      expect(await v.sshOk('cat /etc/kubernetes/kubelet-env')).toBe(`KUBELET_NODE_NAME=${SITE_HOSTNAME}\n`);
      expect(await v.sshOk(`cat ${KUBELET_REGISTERED}`)).toBe(`${SITE_HOSTNAME}\n`);
      expect(await invocation()).not.toBe(before);
      expect(await v.sshOk(`systemctl is-active ${KUBELET}`)).toBe('active\n');
      const renamed = `${ETCD_CERTS_DIR}/etcd-peer-${SITE_HOSTNAME}`;
      expect(await v.sshOk(`cat ${renamed}.crt; echo; cat ${renamed}.key; echo; stat -c %a ${renamed}.key`)).toBe(
        'peer certificate\npeer key\n600\n',
      );
      expect(await v.sshOk(`cat ${former}.crt`)).toBe('peer certificate');
      expect(await v.sshOk(`ls -d ${OFFLINE_CLEARED.join(' ')} 2>/dev/null; true`)).toBe('');
      // the sandboxes were stopped before the deletion: none is running, none made a file again
      expect(await v.sshOk(`ls ${SANDBOXES}; systemctl is-active sandbox-ovnkube-node sandbox-multus; true`)).toBe(
        'inactive\ninactive\n',
      );
      // the stop came before the start: journald has both, in order
      const journal = await v.sshOk(
        `journalctl -u ${KUBELET} -o cat --no-pager | grep -E '^(Stopped|Started) ' | tail -2`,
      );
      expect(
        journal
          .split('\n')
          .filter(Boolean)
          .map((l) => l.split(' ')[0]),
      ).toEqual(['Stopped', 'Started']);
    },
    15 * MIN,
  );
});
