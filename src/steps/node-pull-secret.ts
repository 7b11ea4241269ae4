import { pendingStep } from './pending.js';

export const nodePullSecretStep = pendingStep('node-pull-secret');
