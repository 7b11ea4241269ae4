import { pendingStep } from './pending.js';

export const csrApprovalStep = pendingStep('csr-approval');
