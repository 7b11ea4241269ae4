/**
 * Every folder under nmstate-examples/ is a complete site-config: it loads through the real loader
 * without a finding, `sno-relocate plan --only network` shows what it would change on a factory
 * node, and applying it (to the nmstatectl stub, which validates the state as nmstate does) leaves
 * nothing to plan.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadSiteConfig } from '../../src/config/load.js';
import { networkStep } from '../../src/steps/network.js';
import { runAgent } from './cli.js';
import { REPO, testNode } from './context.js';
import { factoryNetwork } from './factory-network.js';
import { planOf } from '../../src/engine/engine.js';

const EXAMPLES = path.join(REPO, 'nmstate-examples');
const examples = readdirSync(EXAMPLES, { withFileTypes: true })
  .filter((d) => d.isDirectory())
  .map((d) => d.name)
  .sort();

/** What each example's plan must show against the factory network. */
const EXPECTED: Record<string, string[]> = {
  bond: ['+ interfaces[bond0].state: up', '+ interfaces[br-ex].ipv4.address: 10.61.0.20/24, 192.168.127.10/24'],
  dhcp: ['+ interfaces[br-ex].ipv6.enabled: false'],
  'dual-stack': [
    '+ interfaces[br-ex].ipv6.address: 2001:db8:8::20/64',
    '+ routes.config[::/0 via 2001:db8:8::1 dev br-ex]: present',
  ],
  'static-ipv4': [
    '+ interfaces[br-ex].ipv4.address: 10.42.0.20/24, 192.168.127.10/24',
    '+ dns-resolver.config.server: 10.42.0.53',
  ],
  vlan: ['+ interfaces[ens3.100].state: up', '+ interfaces[br-ex].ipv4.address: 10.100.0.20/24, 192.168.127.10/24'],
};

describe('nmstate-examples', () => {
  it('holds the five documented examples', () => {
    expect(examples).toEqual(['bond', 'dhcp', 'dual-stack', 'static-ipv4', 'vlan']);
  });

  for (const name of examples) {
    it(`${name}: loads without findings, plans from the CLI, and applies to nothing left to do`, async () => {
      const loaded = await loadSiteConfig(path.join(EXAMPLES, name), new Date());
      expect(loaded.findings).toEqual([]);
      expect(loaded.files.map((f) => f.name)).toEqual(['site-config.yaml', `${name}.yaml`]);

      const node = testNode({ network: factoryNetwork(), site: loaded.site });
      const plan = runAgent(['plan', path.join(EXAMPLES, name), '--root', node.root, '--only', 'network'], node.env);
      expect(plan.code, plan.stderr).toBe(0);
      expect(plan.stdout).toContain('~ network              apply the site network');
      for (const line of EXPECTED[name]!) expect(plan.stdout).toContain(line);

      // the stub answers no ping and knows no store registry: the round trip checks the state only
      const site = {
        ...loaded.site,
        network: { ...loaded.site.network, verify: { pingGateway: false, resolve: [], timeoutSeconds: 5 } },
      };
      const applied = testNode({ network: factoryNetwork(), site });
      await applied.run([networkStep]);
      expect(await planOf(networkStep, applied.ctx)).toMatchObject({ action: 'noop' });
    });
  }
});
