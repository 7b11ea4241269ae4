import { pendingStep } from './pending.js';

export const hostnameStep = pendingStep('hostname');
