import { pendingStep } from './pending.js';

export const routesStep = pendingStep('routes');
