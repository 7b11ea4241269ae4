/**
 * The clock at the site: the relocation should take "ideally less than 20 minutes" (the relocation
 * enhancement). Every wait the agent may do at the site is bounded (src/base/timeouts.ts, where the
 * steps read their own bounds from); their sum is the worst case a site-config allows.
 */
import {
  API_READY_TIMEOUT_SECONDS,
  CLOCK_SYNC_TIMEOUT_SECONDS,
  CLUSTER_BUSY_WAIT_SECONDS,
  REGISTRY_CHECK_TIMEOUT_SECONDS,
  CSR_WAIT_SECONDS,
  DEFAULT_HEALTH_TIMEOUT_SECONDS,
  DEFAULT_IN_SERVICE_TIMEOUT_SECONDS,
  DEFAULT_VERIFY_TIMEOUT_SECONDS,
  KUBELET_START_TIMEOUT_SECONDS,
} from '../../base/timeouts.js';
import type { SiteConfigV1 } from './schema.js';

export const DEFAULT_BUDGET_MINUTES = 20;

export interface Budget {
  budgetSeconds: number;
  /** what the site-config's own timeouts (and --health-timeout) allow: the waits for the site itself */
  configuredSeconds: number;
  /** with the agent's fixed bounds too: waits for things that take seconds unless something is broken */
  worstSeconds: number;
  parts: { what: string; seconds: number; fixed: boolean }[];
}

/** The longest a run at the site can wait, step by step, with this site-config (and --health-timeout). */
export function worstCase(config: SiteConfigV1, healthTimeoutSeconds = DEFAULT_HEALTH_TIMEOUT_SECONDS): Budget {
  const { spec } = config;
  const parts = [
    {
      what: 'network checks',
      seconds: spec.network.verify?.timeoutSeconds ?? DEFAULT_VERIFY_TIMEOUT_SECONDS,
      fixed: false,
    },
    { what: 'clock sync', seconds: CLOCK_SYNC_TIMEOUT_SECONDS, fixed: true },
    { what: 'kubelet start', seconds: KUBELET_START_TIMEOUT_SECONDS, fixed: true },
    { what: 'API up', seconds: API_READY_TIMEOUT_SECONDS, fixed: true },
    { what: 'registry check', seconds: REGISTRY_CHECK_TIMEOUT_SECONDS, fixed: true },
    { what: 'an update or roll-out under way before the move', seconds: CLUSTER_BUSY_WAIT_SECONDS, fixed: true },
    { what: 'kubelet certificates', seconds: CSR_WAIT_SECONDS, fixed: true },
    { what: 'health', seconds: healthTimeoutSeconds, fixed: false },
    ...(spec.inService
      ? [
          {
            what: 'in service',
            seconds: spec.inService.timeoutSeconds ?? DEFAULT_IN_SERVICE_TIMEOUT_SECONDS,
            fixed: false,
          },
        ]
      : []),
  ];
  const sum = (list: typeof parts) => list.reduce((total, p) => total + p.seconds, 0);
  return {
    budgetSeconds: (spec.budgetMinutes ?? DEFAULT_BUDGET_MINUTES) * 60,
    configuredSeconds: sum(parts.filter((p) => !p.fixed)),
    worstSeconds: sum(parts),
    parts,
  };
}

/** `41.5 min`, `90 s` */
export const minutes = (seconds: number): string =>
  seconds < 120 ? `${seconds} s` : `${Math.round((seconds / 60) * 10) / 10} min`;
