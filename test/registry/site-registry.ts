/**
 * A site's registry for the tests: Debian's docker-registry (the distribution registry) on a free
 * loopback port, serving TLS with a certificate of a site CA made by openssl and admitting one user
 * through htpasswd (bcrypt, made by apache2-utils' htpasswd), as a disconnected site's mirror
 * registry does. Images are pushed into it through its HTTP API (push.ts); nothing is downloaded.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { opensslCa, opensslServing } from '../helpers/openssl.js';
import { freeTcpPort } from '../helpers/ports.js';

export const REGISTRY_USER = 'store42';
export const REGISTRY_PASSWORD = 'site-registry-password';

export interface SiteRegistry {
  /** host:port, as mirrors and pull secrets name it */
  host: string;
  /** the site CA that signed its serving certificate (PEM) */
  caPem: string;
  /** base64 of user:password, as a pull secret's `auth` */
  auth: string;
  stop(): Promise<void>;
}

/** a registry's missing binaries, for describe.skipIf */
export function missingRegistryTools(): string[] {
  return ['docker-registry', 'htpasswd', 'openssl'].filter((tool) => {
    try {
      execFileSync('sh', ['-c', `command -v ${tool}`], { stdio: 'pipe' });
      return false;
    } catch {
      return true;
    }
  });
}

/** Resolves once the registry says it listens; rejects with its output when it exits first. */
function listening(child: ChildProcess): Promise<void> {
  return new Promise((resolve, reject) => {
    let output = '';
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (/listening on/.test(output)) {
        child.stderr?.off('data', onData);
        child.stderr?.resume();
        resolve();
      }
    };
    child.stderr?.on('data', onData);
    child.once('exit', (code) => reject(new Error(`docker-registry exited (${code}) before listening:\n${output}`)));
  });
}

/** Starts a registry; with `ca` its certificate is signed by that CA (two registries of one site). */
export async function startSiteRegistry(ca?: { crt: string; key: string }): Promise<SiteRegistry> {
  const dir = mkdtempSync(path.join(tmpdir(), 'sno-relocate-registry-'));
  const siteCa = ca ?? opensslCa(dir, 'store42-site-ca');
  const serving = opensslServing(dir, 'registry', siteCa, 'IP:127.0.0.1,DNS:localhost');
  const htpasswd = path.join(dir, 'htpasswd');
  execFileSync('htpasswd', ['-Bbc', htpasswd, REGISTRY_USER, REGISTRY_PASSWORD], { stdio: 'pipe' });
  const port = await freeTcpPort();
  const config = path.join(dir, 'config.yml');
  writeFileSync(
    config,
    [
      'version: 0.1',
      'log: {level: info, accesslog: {disabled: true}}',
      `storage: {filesystem: {rootdirectory: ${path.join(dir, 'data')}}, delete: {enabled: true}}`,
      `http: {addr: "127.0.0.1:${port}", tls: {certificate: ${serving.crt}, key: ${serving.key}}}`,
      `auth: {htpasswd: {realm: site-registry, path: ${htpasswd}}}`,
      '',
    ].join('\n'),
  );
  const child = spawn('docker-registry', ['serve', config], { stdio: ['ignore', 'ignore', 'pipe'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  try {
    await listening(child);
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    host: `127.0.0.1:${port}`,
    caPem: readFileSync(siteCa.crt, 'utf8'),
    auth: Buffer.from(`${REGISTRY_USER}:${REGISTRY_PASSWORD}`).toString('base64'),
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
