/**
 * Message ids for the events people search the journal for
 * (`journalctl -u sno-relocate MESSAGE_ID=<id>`). Never change an id once shipped.
 */
export const MessageId = {
  runStarted: '6c1f0b7e2d4a4f1b9e3a5c7d8e9f0a11',
  runFinished: '6c1f0b7e2d4a4f1b9e3a5c7d8e9f0a12',
  runFailed: '6c1f0b7e2d4a4f1b9e3a5c7d8e9f0a13',
  runRefused: '6c1f0b7e2d4a4f1b9e3a5c7d8e9f0a14',
  stepStarted: '6c1f0b7e2d4a4f1b9e3a5c7d8e9f0a21',
  stepFinished: '6c1f0b7e2d4a4f1b9e3a5c7d8e9f0a22',
  stepFailed: '6c1f0b7e2d4a4f1b9e3a5c7d8e9f0a23',
  stepSkipped: '6c1f0b7e2d4a4f1b9e3a5c7d8e9f0a24',
  stepDeclined: '6c1f0b7e2d4a4f1b9e3a5c7d8e9f0a25',
  configInvalid: '6c1f0b7e2d4a4f1b9e3a5c7d8e9f0a31',
  configWaiting: '6c1f0b7e2d4a4f1b9e3a5c7d8e9f0a32',
  configFound: '6c1f0b7e2d4a4f1b9e3a5c7d8e9f0a33',
  configUntrusted: '6c1f0b7e2d4a4f1b9e3a5c7d8e9f0a34',
  networkRollback: '6c1f0b7e2d4a4f1b9e3a5c7d8e9f0a41',
  kubeletGateOpened: '6c1f0b7e2d4a4f1b9e3a5c7d8e9f0a51',
  kubeletGateFailed: '6c1f0b7e2d4a4f1b9e3a5c7d8e9f0a52',
  kubeletGateClosed: '6c1f0b7e2d4a4f1b9e3a5c7d8e9f0a53',
  watchFinding: '6c1f0b7e2d4a4f1b9e3a5c7d8e9f0a61',
  watchHealthChanged: '6c1f0b7e2d4a4f1b9e3a5c7d8e9f0a62',
} as const;
export type MessageIdName = keyof typeof MessageId;
