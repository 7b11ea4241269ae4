/**
 * What a rename of the Node changes on the node before kubelet registers the new name (research:
 * the OVN databases and per-node certificates, LCA lca-cli/ipconfig/prepivot.go; etcd's certificate
 * files, recert hostname_rename/filesystem_rename.rs), and the record of the former name that the
 * node-identity step needs once the new Node exists.
 */
import path from 'node:path/posix';
import type { RootFs } from '../ports/fs.js';

/** the OVN databases hold the old zone and chassis; the two certificates the old name as their CN */
export const OFFLINE_CLEARED = [
  '/var/lib/ovn-ic/etc/ovnnb_db.db',
  '/var/lib/ovn-ic/etc/ovnsb_db.db',
  '/var/lib/ovn-ic/etc/ovnkube-node-certs',
  '/etc/cni/multus/certs',
];
/** the etcd-all-certs secret as the installer copied it for the static pod */
export const ETCD_CERTS_DIR = '/etc/kubernetes/static-pod-resources/etcd-certs/secrets/etcd-all-certs';
const ETCD_CERT_KINDS = ['etcd-peer', 'etcd-serving', 'etcd-serving-metrics'];

/** The etcd certificate files of node `name` in ETCD_CERTS_DIR. */
export async function etcdCertFiles(fs: RootFs, name: string): Promise<string[]> {
  const want = new Set(ETCD_CERT_KINDS.flatMap((k) => ['crt', 'key'].map((ext) => `${k}-${name}.${ext}`)));
  return (await fs.list(ETCD_CERTS_DIR).catch(() => [])).filter((f) => want.has(f)).sort();
}

export interface RenameRecord {
  from: string;
  to: string;
}

export const renameRecordPath = (stateDir: string): string => path.join(stateDir, 'node-rename.json');

export async function readRenameRecord(fs: RootFs, stateDir: string): Promise<RenameRecord | undefined> {
  const text = await fs.readText(renameRecordPath(stateDir));
  return text === undefined ? undefined : (JSON.parse(text) as RenameRecord);
}

export async function writeRenameRecord(fs: RootFs, stateDir: string, record: RenameRecord): Promise<void> {
  await fs.mkdirp(stateDir, 0o700);
  await fs.writeAtomic(renameRecordPath(stateDir), `${JSON.stringify(record)}\n`, { mode: 0o600 });
}
