import { pendingStep } from './pending.js';

export const domainStep = pendingStep('domain');
