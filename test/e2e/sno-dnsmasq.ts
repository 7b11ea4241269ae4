/**
 * OpenShift's single-node dnsmasq configuration, laid into the VM's node image as the assisted
 * installer's MachineConfig 50-master-dnsmasq-configuration lays it on a node (assisted-service
 * internal/network/manifests_generator.go): dnsmasq.service replaced by one that runs
 * /usr/local/bin/dnsmasq_config.sh before dnsmasq (that script rewrites
 * /etc/dnsmasq.d/single-node.conf with the factory's names at every start), enabled, ordered
 * before kubelet and CRI-O; NetworkManager's rc-manager=unmanaged (single-node.conf under
 * NetworkManager/conf.d) and the node's own address first in /etc/resolv.conf, which the
 * installer's `forcedns` dispatcher script keeps. /etc/dnsmasq.conf reads /etc/dnsmasq.d as RHCOS's
 * does. The factory's single-node.conf is already on disk, as after the factory's boots.
 */
import { expect } from 'vitest';
import { enableUnit, installFiles } from './disk.js';
import { events, journal, unitProps } from './node-checks.js';
import { mono } from './scenario.js';
import { INTERNAL_IP } from './sites.js';
import type { Vm } from './vm.js';

const HOST_IP = INTERNAL_IP.split('/')[0]!;
export const FACTORY_DOMAIN = 'sno.factory.example.com';
export const FACTORY_NAMES = `address=/apps.${FACTORY_DOMAIN}/${HOST_IP}
address=/api-int.${FACTORY_DOMAIN}/${HOST_IP}
address=/api.${FACTORY_DOMAIN}/${HOST_IP}
`;
const SITE_FILE = '/etc/dnsmasq.d/sno-relocate-site.conf';

// the generator's script, with the factory's values filled in where its template has them
const CONFIG_SCRIPT = `#!/usr/bin/env bash
if [ -f /etc/default/sno_dnsmasq_configuration_overrides ]; then
    source /etc/default/sno_dnsmasq_configuration_overrides
fi
HOST_IP=\${SNO_DNSMASQ_IP_OVERRIDE:-"${HOST_IP}"}
CLUSTER_NAME=\${SNO_CLUSTER_NAME_OVERRIDE:-"sno"}
BASE_DOMAIN=\${SNO_BASE_DOMAIN_OVERRIDE:-"factory.example.com"}
CLUSTER_FULL_DOMAIN="\${CLUSTER_NAME}.\${BASE_DOMAIN}"
cat << EOF > /etc/dnsmasq.d/single-node.conf
address=/apps.\${CLUSTER_FULL_DOMAIN}/\${HOST_IP}
address=/api-int.\${CLUSTER_FULL_DOMAIN}/\${HOST_IP}
address=/api.\${CLUSTER_FULL_DOMAIN}/\${HOST_IP}
EOF
`;

const UNIT = `[Unit]
Description=Run dnsmasq to provide local dns for Single Node OpenShift
Before=kubelet.service crio.service
After=network.target

[Service]
TimeoutStartSec=30
ExecStartPre=/usr/local/bin/dnsmasq_config.sh
ExecStart=/usr/sbin/dnsmasq -k
Restart=always

[Install]
WantedBy=multi-user.target
`;

export async function laySingleNodeDnsmasq(disk: string): Promise<void> {
  const file = (path: string, contents: string, mode = 0o644) => ({ path, mode, contents: Buffer.from(contents) });
  await installFiles(disk, [
    file('/usr/local/bin/dnsmasq_config.sh', CONFIG_SCRIPT, 0o744),
    file('/etc/systemd/system/dnsmasq.service', UNIT),
    file('/etc/dnsmasq.conf', 'conf-dir=/etc/dnsmasq.d,.rpmnew,.rpmsave,.rpmorig\n'),
    file('/etc/dnsmasq.d/single-node.conf', FACTORY_NAMES),
    file('/etc/NetworkManager/conf.d/single-node.conf', '[main]\nrc-manager=unmanaged\n'),
    file('/etc/resolv.conf', `nameserver ${HOST_IP}\n`),
  ]);
  await enableUnit(disk, 'dnsmasq.service');
}

/**
 * After a relocation to `domain` (<cluster>.<baseDomain>): the agent's file beside the factory's,
 * dnsmasq restarted after the step began, and the site's and the factory's names resolving on the
 * node, through dnsmasq itself (dig) and through the node's resolver (getent).
 */
export async function expectSiteNames(v: Vm, domain: string): Promise<void> {
  expect(await v.sshOk(`cat ${SITE_FILE}`)).toContain(
    `address=/apps.${domain}/${HOST_IP}\naddress=/api-int.${domain}/${HOST_IP}\naddress=/api.${domain}/${HOST_IP}\n`,
  );
  expect(await v.sshOk(`stat -c '%a %U:%G' ${SITE_FILE}`)).toBe('644 root:root\n');
  expect(await v.sshOk('cat /etc/dnsmasq.d/single-node.conf')).toBe(FACTORY_NAMES);

  // restarted once the file was there: dnsmasq started at boot, then again during the step
  const [stepStarted] = (await events(v, 'stepStarted')).filter((e) => e.SNO_RELOCATE_STEP === 'site-names');
  const props = await unitProps(v, 'dnsmasq.service', ['ActiveState', 'ActiveEnterTimestampMonotonic']);
  expect(props.ActiveState).toBe('active');
  expect(Number(props.ActiveEnterTimestampMonotonic)).toBeGreaterThan(mono(stepStarted!));
  const starts = (await journal(v, '-b 0 -u dnsmasq.service')).filter((e) => /started, version/.test(e.MESSAGE ?? ''));
  expect(starts).toHaveLength(2);

  for (const name of [
    `api.${domain}`,
    `api-int.${domain}`,
    `oauth-openshift.apps.${domain}`,
    `console-openshift-console.apps.${domain}`,
    `api.${FACTORY_DOMAIN}`,
    `api-int.${FACTORY_DOMAIN}`,
  ]) {
    expect([name, await v.sshOk(`dig +short +time=2 +tries=2 @127.0.0.1 ${name} A`)]).toEqual([name, `${HOST_IP}\n`]);
    expect([name, (await v.sshOk(`getent ahostsv4 ${name} | head -n 1`)).split(/\s+/)[0]]).toEqual([name, HOST_IP]);
  }
}
