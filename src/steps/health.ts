import { pendingStep } from './pending.js';

export const healthStep = pendingStep('health');
