/** A site-config's fields left out become the defaults the steps act on, never undefined. */
import { describe, expect, it } from 'vitest';
import { DEFAULT_IN_SERVICE_TIMEOUT_SECONDS, DEFAULT_VERIFY_TIMEOUT_SECONDS } from '../base/timeouts.js';
import { toSite } from './normalise.js';
import { parseSiteConfig } from './v1/parse.js';

const nmstate = { interfaces: [] };
const minimal = {
  apiVersion: 'sno-relocate/v1',
  kind: 'SiteConfig',
  metadata: { name: 'store-0042' },
  spec: { baseDomain: 'store.example.com', network: { nmstate }, inService: { workloads: [] } },
};

describe('toSite', () => {
  it('fills what a minimal site-config leaves out', () => {
    const config = parseSiteConfig(minimal).value!;
    const site = toSite(config, nmstate, { certificates: {}, extraManifests: [] });
    expect(site).toMatchObject({
      name: 'store-0042',
      baseDomain: 'store.example.com',
      network: {
        machineNetworks: [],
        verify: { pingGateway: false, resolve: [], timeoutSeconds: DEFAULT_VERIFY_TIMEOUT_SECONDS },
      },
      pullSecretPolicy: 'replace',
      imageDigestMirrors: [],
      imageTagMirrors: [],
      sshAuthorizedKeys: [],
      nodeLabels: {},
      inService: { workloads: [], timeoutSeconds: DEFAULT_IN_SERVICE_TIMEOUT_SECONDS },
    });
    expect(site).not.toHaveProperty('pullSecret');
    expect(site).not.toHaveProperty('inService.probe');
  });
});
