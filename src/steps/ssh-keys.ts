import { pendingStep } from './pending.js';

export const sshKeysStep = pendingStep('ssh-keys');
