/**
 * Paths of the node that layers below src/node read too: the factory record's presence tells the
 * trust check a node that factory prepare made (src/trust/clear-secrets.ts).
 */

/** what factory prepare decided (src/node/factory-record.ts), a file of the internal-IP MachineConfig */
export const FACTORY_RECORD = '/etc/sno-relocate/factory.json';
