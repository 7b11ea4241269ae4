import { pendingStep } from './pending.js';

export const internalIpStep = pendingStep('internal-ip');
