/**
 * The order of the steps, in one place. Each line says why it stands where it does.
 */
import type { AnyStep } from './step.js';
import { clusterIdentityStep } from './cluster-identity.js';
import { accessStep } from './access.js';
import { clockStep } from './clock.js';
import { clusterPullSecretStep } from './cluster-pull-secret.js';
import { csrApprovalStep } from './csr-approval.js';
import { domainStep } from './domain.js';
import { extraManifestsStep } from './extra-manifests.js';
import { healthStep } from './health.js';
import { holdUpgradesStep } from './hold-upgrades.js';
import { hostnameStep } from './hostname.js';
import { imagePullRetryStep } from './image-pull-retry.js';
import { inServiceStep } from './in-service.js';
import { internalIpStep } from './internal-ip.js';
import { ipFamiliesStep } from './ip-families.js';
import { kubeletStep } from './kubelet.js';
import { mirrorsStep } from './mirrors.js';
import { networkStep } from './network.js';
import { nodeIdentityStep } from './node-identity.js';
import { nodeIpHintStep } from './node-ip-hint.js';
import { nodeLabelsStep } from './node-labels.js';
import { nodeNameStep } from './node-name.js';
import { nodeRenameStep } from './node-rename.js';
import { ntpStep } from './ntp.js';
import { proxyStep } from './proxy.js';
import { registryCheckStep } from './registry-check.js';
import { releaseUpgradesStep } from './release-upgrades.js';
import { routesStep } from './routes.js';
import { siteNamesStep } from './site-names.js';
import { sshKeysStep } from './ssh-keys.js';

export const STEPS: readonly AnyStep[] = [
  // ssh keys first: a network config that goes wrong must still be debuggable
  sshKeysStep,
  // no node pull secret step: /var/lib/kubelet/config.json is a file of the rendered MachineConfig,
  // so the site's credentials reach it through cluster-pull-secret and the machine-config daemon
  // the site network, with checkpoint, verification and rollback
  networkStep,
  // after the network: br-ex must exist before its internal address is pinned
  internalIpStep,
  // after internal-ip, which pins kubelet and CRI-O apart from the site network the hint names
  nodeIpHintStep,
  // after internal-ip, whose address the names resolve to; before the cluster steps: the OAuth route's
  // availability check requests the site's host from inside the cluster
  siteNamesStep,
  // before the hostname: the Node's name is pinned while the static hostname still is the factory's,
  // the name of a node whose kubelet holds no certificate yet
  nodeNameStep,
  // before kubelet, after node-name: the OS hostname changes, the Node's name only by node-name's choice
  hostnameStep,
  // after the network, which reaches the site's time servers; before kubelet, which checks certificates
  ntpStep,
  // after the site's time servers are set: time is judged on a synchronised clock before kubelet
  // checks certificates and the cluster steps issue them (deferred judgments, power-on-by date)
  clockStep,
  // the gate: kubelet starts only once every node step has succeeded
  kubeletStep,
  // first of the cluster steps, before any cluster change: the site's registries must serve every image
  // the node needs before cluster-pull-secret and mirrors switch the node to them
  registryCheckStep,
  // the first cluster change: none is made while an update, a pool roll-out, an image-based upgrade or
  // an IP change moves the cluster, and from here on an update waits for the agent
  holdUpgradesStep,
  // IP families other than the cluster's are refused before any cluster change
  ipFamiliesStep,
  // a release registry the agent cannot honour is refused before any cluster change
  clusterIdentityStep,
  // needs kubelet: it is kubelet that files these requests
  csrApprovalStep,
  // the node up under the name it has and the cluster answering its preflight; before node-identity,
  // which finishes the rename online, and before any write that rolls out a control-plane component
  nodeRenameStep,
  // needs the Node registered, so its requests approved; after a rename it moves the former Node's
  // labels, etcd secrets and operator statuses and deletes it without waiting for Ready
  nodeIdentityStep,
  // the Node registered (and a former one gone); a label rolls out no control-plane component
  nodeLabelsStep,
  // while the API servers are stable: nothing before it rolls out a control-plane component
  routesStep,
  // back to back: one render of the master pool, no reboot, a crio reload
  clusterPullSecretStep,
  mirrorsStep,
  // the writes that roll out the openshift-apiserver, router and kube-apiserver, last and together
  domainStep,
  // apiserver.config again, right after domain's named certificate: one burst of kube-apiserver changes
  accessStep,
  // the agent's last write: for a proxy the machine-config daemon reboots the node, so every other write is
  // in before it; health, in the run that resumes after that boot, waits for the master pool
  proxyStep,
  // after the agent's own writes, which a manifest's roll-out (a MachineConfig, a PerformanceProfile) and
  // reboot must not cut short; before health, which waits for that roll-out to settle
  extraManifestsStep,
  // last: waits for those rollouts to settle, with everything above in place
  healthStep,
  // after health, which waits for the master pool to roll the site's pull secret and mirrors out: pods
  // that failed to pull before the switch pull again through the site's registries
  imagePullRetryStep,
  // after health: the site's own workloads run on a healthy cluster; `done` means they are ready
  inServiceStep,
  // last: the move is done, so the cluster may be updated again
  releaseUpgradesStep,
];
