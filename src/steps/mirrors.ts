import { pendingStep } from './pending.js';

export const mirrorsStep = pendingStep('mirrors');
