/**
 * The node's Kubernetes name, as kubelet decides it. OpenShift's kubelet unit reads
 * /etc/kubernetes/kubelet-env if it exists and passes `--hostname-override=${KUBELET_NODE_NAME}`
 * (machine-config-operator templates/master/01-master-kubelet/_base/units/kubelet.service.yaml:
 * release-4.14 @00b2e0b1cc lines 19 and 40, release-4.15 @1ffa8341fb lines 19 and 40,
 * release-4.16 @7327bb2359, release-4.17 @3bdd678e83 and release-4.18 @f313997e0b lines 21 and 41;
 * the on-prem variant of the same unit has the same two lines). kubelet registers under that name
 * when it is not empty, and under the lowercased kernel hostname otherwise
 * (k8s.io/component-helpers node/util GetHostname). On platform none and baremetal nothing in
 * OpenShift writes the file (only the AWS, OpenStack and Alibaba node-name units do), so the agent
 * can pin the name there without creating drift, unless a MachineConfig declares the file.
 */
import { X509Certificate } from 'node:crypto';
import path from 'node:path/posix';
import { StepError } from '../base/errors.js';
import type { RootFs } from '../ports/fs.js';
import { readStaticHostname } from './hostname.js';

export const KUBELET_ENV_FILE = '/etc/kubernetes/kubelet-env';
export const NODE_NAME_VAR = 'KUBELET_NODE_NAME';
/** kubelet's client certificate: its subject is `CN=system:node:<the name it registered under>` */
export const KUBELET_CLIENT_CERT = '/var/lib/kubelet/pki/kubelet-client-current.pem';
/** set on the Node: the OS hostname of the site, while the Node keeps its factory name */
export const SITE_HOSTNAME_ANNOTATION = 'sno-relocate.openshift.io/site-hostname';

const LINE = new RegExp(`^\\s*${NODE_NAME_VAR}\\s*=\\s*(.*?)\\s*$`);

/** The value of KUBELET_NODE_NAME in an EnvironmentFile's text (its last assignment, quotes removed). */
export function kubeletEnvNodeName(text: string | undefined): string | undefined {
  let value: string | undefined;
  for (const line of (text ?? '').split('\n')) {
    const m = LINE.exec(line);
    if (m) value = m[1]!.replace(/^(["'])(.*)\1$/, '$2');
  }
  return value || undefined;
}

/** The file with KUBELET_NODE_NAME set to `name`; every other line kept as it was. */
export function withNodeName(text: string | undefined, name: string): string {
  const kept = (text ?? '').split('\n').filter((l) => l !== '' && !LINE.test(l));
  return [...kept, `${NODE_NAME_VAR}=${name}`, ''].join('\n');
}

/** The name in kubelet's client certificate (`CN=system:node:<name>`), if it holds a readable one. */
export async function certifiedNodeName(fs: RootFs): Promise<string | undefined> {
  const pem = await fs.readText(KUBELET_CLIENT_CERT);
  if (!pem?.includes('BEGIN CERTIFICATE')) return undefined;
  try {
    const cn = new X509Certificate(pem).subject.split('\n').find((l) => l.startsWith('CN=system:node:'));
    return cn?.slice('CN=system:node:'.length) || undefined;
  } catch {
    return undefined;
  }
}

/** The name kubelet registers the Node under when it starts now: kubelet-env's, else the hostname. */
export async function registeredNodeName(fs: RootFs): Promise<string> {
  const name = kubeletEnvNodeName(await fs.readText(KUBELET_ENV_FILE)) ?? (await readStaticHostname(fs)).toLowerCase();
  if (!name)
    throw new StepError(
      `the node's name is unknown: no ${NODE_NAME_VAR} in ${KUBELET_ENV_FILE} and no static hostname (/etc/hostname)`,
    );
  return name;
}

/** Lays down kubelet-env holding `content` (as withNodeName makes it). */
export async function layKubeletEnv(fs: RootFs, content: string): Promise<void> {
  await fs.mkdirp(path.dirname(KUBELET_ENV_FILE), 0o755);
  await fs.writeAtomic(KUBELET_ENV_FILE, content, { mode: 0o644 });
}
