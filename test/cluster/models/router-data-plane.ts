/**
 * The default router's data plane and the ingress operator's certificates, for the operators'
 * route health checks (route-health.ts):
 * - the ingress operator makes the router's own wildcard certificate for the IngressController's
 *   domain, signed by its router CA, as openshift-ingress/router-certs-default when the
 *   IngressController names no spec.defaultCertificate (cluster-ingress-operator release-4.18
 *   pkg/operator/controller/ingress/certificate.go), and publishes the effective default
 *   certificate's tls.crt as openshift-config-managed/default-ingress-cert
 *   (pkg/operator/controller/certificate-publisher/controller.go:228-244, publish_ca.go:15-17);
 * - the router answers HTTPS on port 443 of the address the apps names resolve to: for an admitted
 *   route with its own spec.tls certificate it serves that, for a passthrough route the backend's
 *   (the OAuth server serves the componentRoute's secret, else the router certificate), else the
 *   default certificate; an admitted host answers 200, any other the router's 503.
 */
import { readFileSync, mkdtempSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import type { KubeConfig } from '@kubernetes/client-node';
import { opensslCa, opensslServing } from '../../helpers/openssl.js';
import {
  clients,
  INGRESS_CONTROLLERS,
  isNotFound,
  listRoutes,
  readIngressConfig,
  startLoop,
  type Model,
} from './loop.js';

interface Pair {
  cert: string;
  key: string;
}

export interface RouterDataPlane extends Model {
  /** the address it answers on (port 443) */
  address: string;
  close(): Promise<void>;
}

/** Starts the data plane on `address`:443; its loop follows the routes and certificates. */
export async function startRouterDataPlane(
  kc: KubeConfig,
  address: string,
  intervalMs = 200,
): Promise<RouterDataPlane> {
  const { custom, core } = clients(kc);
  let served = new Map<string, { context: tls.SecureContext; admitted: boolean }>();
  let fallback: tls.SecureContext | undefined;
  const dir = mkdtempSync(path.join(tmpdir(), 'router-'));
  const routerCa = opensslCa(dir, 'ingress-operator');
  let wildcardFor = '';

  const pairOf = async (namespace: string, name: string): Promise<Pair | undefined> => {
    try {
      const s = await core.readNamespacedSecret({ namespace, name });
      const b = (k: string) => Buffer.from(s.data?.[k] ?? '', 'base64').toString('utf8');
      return { cert: b('tls.crt'), key: b('tls.key') };
    } catch (e) {
      if (isNotFound(e)) return undefined;
      throw e;
    }
  };

  const loop = startLoop('router-data-plane', intervalMs, async () => {
    const ingress = await readIngressConfig(custom);
    const ic = (await custom.getNamespacedCustomObject({
      ...INGRESS_CONTROLLERS,
      namespace: 'openshift-ingress-operator',
      name: 'default',
    })) as { spec?: { defaultCertificate?: { name?: string } }; status?: { domain?: string } };
    const domain = ic.status?.domain ?? ingress.spec.domain;
    if (wildcardFor !== domain) {
      const own = opensslServing(dir, 'router-certs-default', routerCa, `DNS:*.${domain}`);
      const data = {
        'tls.crt': readFileSync(own.crt).toString('base64'),
        'tls.key': readFileSync(own.key).toString('base64'),
      };
      await core
        .deleteNamespacedSecret({ namespace: 'openshift-ingress', name: 'router-certs-default' })
        .catch(() => undefined);
      await core.createNamespacedSecret({
        namespace: 'openshift-ingress',
        body: { metadata: { name: 'router-certs-default' }, type: 'kubernetes.io/tls', data },
      });
      wildcardFor = domain;
    }
    const defaultPair = await pairOf('openshift-ingress', ic.spec?.defaultCertificate?.name ?? 'router-certs-default');
    if (!defaultPair) return;
    await publish(defaultPair.cert);
    const defaultContext = tls.createSecureContext(defaultPair);
    const oauthSecret = ingress.spec.componentRoutes?.find(
      (c) => c.namespace === 'openshift-authentication' && c.name === 'oauth-openshift',
    )?.servingCertKeyPairSecret?.name;
    const oauthPair = oauthSecret ? await pairOf('openshift-config', oauthSecret) : undefined;
    const next = new Map<string, { context: tls.SecureContext; admitted: boolean }>();
    for (const route of await listRoutes(custom)) {
      const spec = route.spec as { host?: string; tls?: { termination?: string; certificate?: string; key?: string } };
      for (const entry of route.status?.ingress ?? []) {
        if (!entry.host) continue;
        const admitted = entry.conditions?.some((c) => c.type === 'Admitted' && c.status === 'True') ?? false;
        let context = defaultContext;
        if (spec.tls?.termination === 'passthrough' && route.metadata.name === 'oauth-openshift' && oauthPair)
          context = tls.createSecureContext(oauthPair);
        else if (spec.tls?.certificate && spec.tls.key)
          context = tls.createSecureContext({ cert: spec.tls.certificate, key: spec.tls.key });
        if (!next.get(entry.host)?.admitted) next.set(entry.host, { context, admitted });
      }
    }
    served = next;
    fallback = defaultContext;
  });

  async function publish(crt: string): Promise<void> {
    const ref = { namespace: 'openshift-config-managed', name: 'default-ingress-cert' };
    const body = { metadata: { name: ref.name }, data: { 'ca-bundle.crt': crt } };
    try {
      const cm = await core.readNamespacedConfigMap(ref);
      if (cm.data?.['ca-bundle.crt'] !== crt)
        await core.replaceNamespacedConfigMap({ ...ref, body: { ...cm, data: body.data } });
    } catch (e) {
      if (!isNotFound(e)) throw e;
      await core.createNamespacedConfigMap({ namespace: ref.namespace, body });
    }
  }

  const server = https.createServer(
    {
      SNICallback: (name, cb) => {
        const context = served.get(name)?.context ?? fallback;
        cb(context ? null : new Error('the router has no certificate yet'), context);
      },
    },
    (req, res) => {
      const host = (req.headers.host ?? '').replace(/:\d+$/, '');
      res.writeHead(served.get(host)?.admitted ? 200 : 503).end();
    },
  );
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(443, address, resolve);
  });
  return Object.assign(loop, {
    address,
    async close() {
      await loop.stop();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  });
}
