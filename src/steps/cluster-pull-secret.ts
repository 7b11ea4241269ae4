import { pendingStep } from './pending.js';

export const clusterPullSecretStep = pendingStep('cluster-pull-secret');
