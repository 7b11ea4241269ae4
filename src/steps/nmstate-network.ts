import { pendingStep } from './pending.js';

export const networkStep = pendingStep('network');
