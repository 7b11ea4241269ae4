/**
 * `npm run demo`: validates the bundled example site-config and prints the full plan that `run`
 * would carry out on a factory-fresh node laid out in a temporary root. nmstatectl is answered by
 * the test stand-in holding the factory network, and systemd by the test services on a private
 * D-Bus when dbus-daemon is installed, so every node step is planned. When the kube-apiserver that
 * `npm test` builds is there, a factory cluster is seeded on it (etcd and kube-apiserver on loopback,
 * stopped at the end) and the cluster steps are planned against it too; otherwise they are deferred.
 * Nothing on this machine changes.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { missingDbusDaemon, startTestBus } from '../test/dbus/bus.js';
import { startFactory } from '../test/cluster/env.js';
import { missingBinaries } from '../test/kube/cluster.js';
import { layFactoryNode } from '../test/fixtures/factory-node.js';
import { REPO, stubEnvironment } from '../test/node/context.js';
import { factoryNetwork } from '../test/node/factory-network.js';

const example = path.join(REPO, 'examples', 'store-0042');
const root = mkdtempSync(path.join(tmpdir(), 'sno-relocate-demo-'));
const bus = missingDbusDaemon() ? undefined : await startTestBus({ root });
const missing = missingBinaries();
if (missing.length)
  console.log(`(no factory cluster for the cluster steps: ${missing.join(', ')}; \`npm test\` builds it)`);
const factory = missing.length ? undefined : await startFactory();
try {
  layFactoryNode(root);
  const stubs = stubEnvironment(root);
  writeFileSync(stubs.NMSTATECTL_STUB_STATE!, JSON.stringify({ current: factoryNetwork() }));
  const env = { ...process.env, ...stubs, ...(bus ? { DBUS_SYSTEM_BUS_ADDRESS: bus.address } : {}) };
  const cli = (...args: string[]) =>
    spawnSync(process.execPath, ['--import', 'tsx', path.join(REPO, 'src/cli/main.ts'), ...args], {
      stdio: 'inherit',
      env,
    }).status ?? 1;
  // against the temp root throughout: this machine's own trust anchors, if any, play no part
  console.log(`$ sno-relocate validate ${path.relative(REPO, example)} --root ${root}`);
  let code = cli('validate', example, '--root', root);
  if (code === 0) {
    console.log(`\n$ sno-relocate plan ${path.relative(REPO, example)} --root ${root}`);
    code = cli('plan', example, '--root', root, ...(factory ? ['--kubeconfig', factory.cluster.kubeconfigPath] : []));
  }
  process.exitCode = code;
} finally {
  await factory?.stop();
  await bus?.stop();
  rmSync(root, { recursive: true, force: true });
}
