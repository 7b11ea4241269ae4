/**
 * `npm run demo` (through scripts/demo.sh): signs the bundled example site-config, store-0042, with a
 * factory key whose public half becomes the node's trust anchor, and relocates it
 * on a factory-fresh node laid out in a temporary root and a factory cluster seeded on a local API
 * server, then shows `status`, `watch --once` on the relocated cluster, and a second `run` with
 * nothing left to do. nmstatectl is answered by the test stand-in holding the factory network, and
 * systemd and hostnamed by the test services on a private D-Bus; the cluster is a real etcd and
 * kube-apiserver on loopback. Without the kube-apiserver build the node half runs alone, and the demo
 * says how to get the cluster half. Nothing outside the temporary folders changes; they, the API server
 * and the bus go away at the end, also on Ctrl-C.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { setTimeout as wait } from 'node:timers/promises';
import { CertificatesV1Api } from '@kubernetes/client-node';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import yaml from 'js-yaml';
import { missingDbusDaemon, startTestBus } from '../test/dbus/bus.js';
import { startFactory, type ClusterEnv } from '../test/cluster/env.js';
import { missingBinaries } from '../test/kube/cluster.js';
import { createCsr, kubeletCsrSpecs } from '../test/kube/csr-requests.js';
import { FACTORY_NODE_IP } from '../test/kube/factory-cluster.js';
import { layFactoryNode } from '../test/fixtures/factory-node.js';
import { REPO, stubEnvironment } from '../test/node/context.js';
import { TRUST_DIR } from '../src/trust/check.js';
import { factoryNetwork } from '../test/node/factory-network.js';

const say = (line: string) => process.stdout.write(`${line}\n`);
const temp = mkdtempSync(path.join(tmpdir(), 'sno-relocate-demo-'));
const root = path.join(temp, 'node');
const site = path.join(temp, 'store-0042');
const consoleFile = path.join(temp, 'console');
let bus: Awaited<ReturnType<typeof startTestBus>> | undefined;
let factory: ClusterEnv | undefined;
let child: ChildProcess | undefined;

/** set on Ctrl-C or SIGTERM */
let stopping = false;
/** set once the first run is over: the demo's kubelet has nothing more to file */
let runOver = false;

/**
 * What the node's kubelet does once the gate opens: it files its client certificate request, and its
 * serving request once the client one is approved. The demo has no kubelet, so it plays that part,
 * looking every quarter second at the calls systemd received and at the requests' approval.
 */
async function playKubelet(hostname: string): Promise<void> {
  const kc = factory!.cluster.kubeConfig();
  const certificates = kc.makeApiClient(CertificatesV1Api);
  const specs = kubeletCsrSpecs(hostname, FACTORY_NODE_IP, 'demo');
  const started = async () => (await bus!.services.calls()).some((c) => c.member === 'StartUnit');
  const done = () => stopping || runOver;
  while (!done() && !(await started())) await wait(250);
  if (done()) return;
  const client = await createCsr(kc, specs.client);
  const approved = async () =>
    (await certificates.readCertificateSigningRequest({ name: client })).status?.conditions?.some(
      (c) => c.type === 'Approved' && c.status === 'True',
    );
  while (!done() && !(await approved())) await wait(250);
  if (!done()) await createCsr(kc, specs.serving);
}

let cleaning: Promise<void> | undefined;
const cleanUp = () =>
  (cleaning ??= (async () => {
    stopping = true;
    child?.kill('SIGTERM');
    await factory?.stop();
    await bus?.stop();
    rmSync(temp, { recursive: true, force: true });
  })());
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => {
    say(`\n(${signal}: stopping the API server and the bus, removing ${temp})`);
    void cleanUp().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
  });

/**
 * Runs the agent from source: its stdout as it comes, the console banner lines as they are written
 * (prefixed as on the node's screen), and the journal lines that match `journal` (all of them when the
 * command fails).
 */
function agent(args: string[], env: Record<string, string>, journal?: RegExp): Promise<number> {
  say(`\n$ sno-relocate ${args.map((a) => a.replace(`${temp}/`, '$DEMO/')).join(' ')}`);
  const showConsole = () => {
    for (const line of readConsole()) say(`  console | ${line}`);
  };
  return new Promise((resolve) => {
    child = spawn(process.execPath, ['--import', 'tsx', path.join(REPO, 'src/cli/main.ts'), ...args], {
      cwd: REPO,
      stdio: ['ignore', 'inherit', 'pipe'],
      env: { ...process.env, JOURNAL_STREAM: '', INVOCATION_ID: '', ...env },
    });
    let log = '';
    // the agent logs each step as it goes: the moment to look at the console too
    child.stderr!.on('data', (chunk: Buffer) => {
      log += chunk.toString();
      showConsole();
    });
    child.on('close', (code) => {
      child = undefined;
      // interrupted: the clean-up speaks for itself
      if (stopping) return resolve(code ?? 1);
      showConsole();
      const lines = log.split('\n').filter(Boolean);
      // the journal is the support engineer's view: the lines asked for, or all of them on a failure
      for (const line of lines.filter((l) => code !== 0 || journal?.test(l)))
        say(code !== 0 ? line : `  journal | ${line.replace(/^\S+ +\S+ +/, '').replace(/ msgId=.*$/, '')}`);
      resolve(code ?? 1);
    });
  });
}

let consoleSeen = 0;
function readConsole(): string[] {
  let lines: string[] = [];
  try {
    lines = readFileSync(consoleFile, 'utf8').split('\n').filter(Boolean);
  } catch {
    return [];
  }
  const fresh = lines.slice(consoleSeen);
  consoleSeen = lines.length;
  return fresh;
}

async function main(): Promise<number> {
  say(`Demo folder: ${temp} ($DEMO below); nothing outside it changes.`);
  // The site-config as the technician brings it, copied: this machine is not on the store's network,
  // so the copy checks the gateway and names this machine can reach instead of the store's.
  cpSync(path.join(REPO, 'examples/store-0042'), site, { recursive: true });
  const configFile = path.join(site, 'site-config.yaml');
  const config = yaml.load(readFileSync(configFile, 'utf8')) as {
    spec: { hostname: string; network: { verify: object }; registryCheck?: string };
  };
  config.spec.network.verify = { pingGateway: false, resolve: ['localhost'], timeoutSeconds: 10 };
  config.spec.registryCheck = 'skip';
  writeFileSync(configFile, yaml.dump(config));
  say('The site-config is examples/store-0042, except that its network check resolves localhost instead of');
  say("pinging the store's gateway and resolving its registry, which are not on this machine's network,");
  say("and that it skips the check of the store's registry (spec.registryCheck: skip), for the same reason.");

  layFactoryNode(root);
  const env: Record<string, string> = stubEnvironment(root);
  writeFileSync(env.NMSTATECTL_STUB_STATE!, JSON.stringify({ current: factoryNetwork() }));
  const noBus = missingDbusDaemon();
  if (noBus) {
    say(`The node's systemd and hostnamed need a private D-Bus: ${noBus}`);
    return 1;
  }
  bus = await startTestBus({ root });
  env.DBUS_SYSTEM_BUS_ADDRESS = bus.address;
  say(
    `Factory node: laid out in $DEMO/node (nmstatectl stand-in with the factory network, systemd on a private D-Bus)`,
  );

  // the recommended configuration: the factory signs the folder, and the node takes only what its
  // trust anchor verifies (docs/security.md)
  say("\nThe factory signs the site folder; its public key is the node's trust anchor:");
  const key = path.join(temp, 'factory-demo');
  for (const args of [
    ['keygen', '--out', key],
    ['sign', '--key', `${key}.key`, site],
  ]) {
    const signed = await agent(args, env);
    if (signed !== 0) return signed;
  }
  mkdirSync(path.join(root, TRUST_DIR), { recursive: true });
  cpSync(`${key}.pub`, path.join(root, TRUST_DIR, 'factory-demo.pub'));

  const missing = missingBinaries();
  if (missing.length === 0) {
    say('Factory cluster: starting etcd and kube-apiserver on loopback and seeding it (about 20 s) ...');
    // no router on port 443 nor cluster DNS on port 53 for a workstation user: the console and
    // authentication operators' models take their routes as healthy once admitted
    factory = await startFactory({ routeHealth: false });
    say(`Factory cluster: ${factory.cluster.server}, *.apps.sno.factory.example.com`);
  } else {
    say('No factory cluster, so the demo runs the node half only:');
    for (const m of missing) say(`  ${m}`);
    say('For the cluster half too: npm run demo -- --build (builds the kube-apiserver once, about 5-9 min, cached).');
  }

  // a node holds the cluster healthy for two minutes before `done`; the demo's seeded cluster is
  // calm at once, so ten seconds show the same wait without making the newcomer sit through it
  const cluster = [
    '--kubeconfig',
    factory?.cluster.kubeconfigPath ?? '',
    '--health-timeout',
    '60',
    '--health-stable',
    '10',
  ];
  const common = ['--root', root, ...(factory ? cluster : ['--only', 'node'])];
  const run = (journal?: RegExp) => agent(['run', site, ...common, '--console', consoleFile], env, journal);
  const kubelet = factory
    ? playKubelet(config.spec.hostname).catch((err: Error) => say(`(the demo's kubelet stopped: ${err.message})`))
    : undefined;
  let code = await run();
  runOver = true;
  await kubelet;
  if (code !== 0) return code;
  code = await agent(['status', '--root', root], env);
  if (code !== 0) return code;
  if (factory) {
    code = await agent(['watch', '--once', '--root', root, '--kubeconfig', factory.cluster.kubeconfigPath], env);
    if (code !== 0) return code;
  }
  say('\nA second run finds nothing left to do (its journal lines below):');
  code = await run(/nothing to do/);
  if (code === 0) say(factory ? '\nDemo done.' : '\nDemo done (node half).');
  return code;
}

// a reader that went away (`npm run demo | head`) must not keep the clean-up from running
process.stdout.on('error', () => undefined);
process.exitCode = await main().finally(cleanUp);
