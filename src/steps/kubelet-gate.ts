import { pendingStep } from './pending.js';

export const kubeletStep = pendingStep('kubelet');
