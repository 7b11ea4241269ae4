/**
 * Every wait the agent may do at the site, in one place: the steps read their bounds from here and
 * `validate` adds them up against the site-config's budget (src/config/v1/budget.ts).
 */
/** network: the site-config's verify.timeoutSeconds, by default */
export const DEFAULT_VERIFY_TIMEOUT_SECONDS = 90;
/** kubelet: its start job; kubelet reports ready within seconds, the bound covers a slow first start */
export const KUBELET_START_TIMEOUT_SECONDS = 5 * 60;
/** the first cluster step: the API server coming up after kubelet started its static pods */
export const API_READY_TIMEOUT_SECONDS = 10 * 60;
/** csr-approval: kubelet retries its requests every few seconds; a quarter of an hour covers a slow start */
export const CSR_WAIT_SECONDS = 15 * 60;
/** a CustomResourceDefinition the agent creates (its report's, an extra manifest's): Established within seconds */
export const CRD_ESTABLISH_TIMEOUT_SECONDS = 30;
/** hold-upgrades: a ClusterVersion update or a MachineConfigPool roll-out that began before the agent finishing */
export const CLUSTER_BUSY_WAIT_SECONDS = 10 * 60;
/** registry-check: the whole check of every image the node needs (a thousand digests take seconds) */
export const REGISTRY_CHECK_TIMEOUT_SECONDS = 5 * 60;
/** registry-check: one request to a registry */
export const REGISTRY_REQUEST_TIMEOUT_SECONDS = 10;
/** health: --health-timeout */
export const DEFAULT_HEALTH_TIMEOUT_SECONDS = 10 * 60;
/** in-service: the site-config's inService.timeoutSeconds, by default */
export const DEFAULT_IN_SERVICE_TIMEOUT_SECONDS = 5 * 60;
/** clock: chronyd synchronising with the site's time servers (iburst answers within seconds) */
export const CLOCK_SYNC_TIMEOUT_SECONDS = 60;
