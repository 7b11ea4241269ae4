import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { RefusedError } from '../base/errors.js';
import type { Site } from '../config/site.js';
import { createRootFs } from '../ports/fs.js';
import {
  checkSiteAgainstRecord,
  makeRecord,
  parseRecord,
  recordedInternalIPs,
  recordText,
  siteAgainstRecord,
} from './factory-record.js';
import { FACTORY_RECORD } from '../base/node-files.js';

const NOW = new Date('2026-11-01T00:00:00Z');
const v4 = makeRecord('sno-factory', '192.168.127.10/24', NOW);
/** a dual-stack node installed IPv6-primary, as its Node lists its InternalIPs */
const v6First = makeRecord('sno-factory', ['fd00:127::10/64', '192.168.127.10/24'], NOW);
const net = (internalIP?: string, secondaryInternalIP?: string, machineNetworks: string[] = []) => ({
  ...(internalIP && { internalIP }),
  ...(secondaryInternalIP && { secondaryInternalIP }),
  machineNetworks,
});

describe('the factory record, one internal address per family', () => {
  it('records the primary family first and the other in the secondary fields, and reads back', () => {
    expect(v6First).toMatchObject({
      installAddress: 'fd00:127::10/64',
      installSubnet: 'fd00:127::/64',
      internalIP: 'fd00:127::10/64',
      secondaryInstallAddress: '192.168.127.10/24',
      secondaryInstallSubnet: '192.168.127.0/24',
      secondaryInternalIP: '192.168.127.10/24',
    });
    expect(recordedInternalIPs(v6First)).toEqual(['fd00:127::10/64', '192.168.127.10/24']);
    expect(parseRecord(recordText(v6First))).toEqual(v6First);
    // a single-stack record is the record written before families were kept
    expect(Object.keys(v4)).toEqual(['version', 'node', 'installAddress', 'installSubnet', 'internalIP', 'preparedAt']);
  });

  it("names the node key when made on the node, and reads an older record's key as absent", () => {
    const recipient = 'age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p';
    const keyed = makeRecord('sno-factory', '192.168.127.10/24', NOW, recipient);
    expect(parseRecord(recordText(keyed))?.nodeKey).toBe(recipient);
    // byte for byte what factory prepare wrote before node keys
    const older =
      '{\n  "version": 1,\n  "node": "sno-factory",\n  "installAddress": "192.168.127.10/24",\n  "installSubnet": "192.168.127.0/24",\n  "internalIP": "192.168.127.10/24",\n  "preparedAt": "2026-11-01T00:00:00.000Z"\n}\n';
    const read = parseRecord(older);
    expect(read).toEqual(v4);
    expect(read?.nodeKey).toBeUndefined();
    // kept as it is, its text unchanged: the daemon declaring it sees no drift
    expect(recordText(read!)).toBe(older);
    expect(parseRecord(recordText({ ...keyed, nodeKey: 'not-a-recipient' }))).toBeUndefined();
  });

  it.each<[string, ReturnType<typeof net>]>([
    ['no internal IP: the recorded ones are kept', net()],
    ['the IPv6-primary site on both install subnets', net('fd00:127::20/64', '192.168.127.20/24')],
    ['machine networks of both families', net(undefined, undefined, ['fd00:127::/64', '192.168.127.0/24'])],
  ])('takes a dual-stack IPv6-primary site: %s', (_, network) => {
    expect(siteAgainstRecord(v6First, network)).toEqual([]);
  });

  it('refuses, per family, an address off that family install subnet, naming the field and the family', () => {
    expect(siteAgainstRecord(v6First, net('fd00:99::10/64', '10.0.0.10/24'))).toEqual([
      "$.spec.network.internalIP: fd00:99::10/64 is off the install subnet fd00:127::/64 of this node (recorded by factory prepare in /etc/sno-relocate/factory.json): the node's etcd member, serving certificates and Node object keep the install address fd00:127::10; leave it out or set it to fd00:127::10/64",
      "$.spec.network.secondaryInternalIP: 10.0.0.10/24 is off the install subnet 192.168.127.0/24 of this node (recorded by factory prepare in /etc/sno-relocate/factory.json): the node's etcd member, serving certificates and Node object keep the install address 192.168.127.10; leave it out or set it to 192.168.127.10/24",
    ]);
  });

  it('refuses internal IPs of one family on a dual-stack node: kubelet would restart without the other', () => {
    expect(siteAgainstRecord(v6First, net('fd00:127::10/64'))).toEqual([
      '$.spec.network.internalIP: the internal IPs are IPv6 only, but this node was installed IPv6 and IPv4 (recorded by factory prepare in /etc/sno-relocate/factory.json): give one per family, IPv6 first, or leave them out',
    ]);
  });

  it('refuses the other family first on a dual-stack node', () => {
    expect(siteAgainstRecord(v6First, net('192.168.127.10/24', 'fd00:127::10/64'))).toEqual([
      "$.spec.network.internalIP: 192.168.127.10/24 is IPv4, but this node's primary family is IPv6 (recorded by factory prepare in /etc/sno-relocate/factory.json): give the IPv6 internal IP first and the other in secondaryInternalIP",
    ]);
  });

  it('refuses a family the node was not installed with, in the internal IPs or the machine networks', () => {
    expect(siteAgainstRecord(v4, net('192.168.127.10/24', 'fd00:127::10/64', ['fd00:127::/64']))).toEqual([
      '$.spec.network.secondaryInternalIP: fd00:127::10/64 is IPv6, but this node was installed IPv4 only (recorded by factory prepare in /etc/sno-relocate/factory.json): the cluster cannot take another family at a site',
      '$.spec.network.machineNetworks: IPv6, but this node was installed IPv4 only (recorded by factory prepare in /etc/sno-relocate/factory.json)',
    ]);
  });

  it("is the admission rule: refused with every reason from the node's record, nothing on the host changed", async () => {
    const root = mkdtempSync(path.join(tmpdir(), 'factory-record-'));
    mkdirSync(path.join(root, path.dirname(FACTORY_RECORD)), { recursive: true });
    writeFileSync(path.join(root, FACTORY_RECORD), recordText(v6First));
    const site = (network: ReturnType<typeof net>) => ({ network }) as Site;
    await expect(
      checkSiteAgainstRecord(createRootFs(root), site(net('fd00:127::30/64', '192.168.127.30/24'))),
    ).resolves.toBeUndefined();
    const refused = checkSiteAgainstRecord(createRootFs(root), site(net('192.168.127.30/24')));
    await expect(refused).rejects.toBeInstanceOf(RefusedError);
    await expect(refused).rejects.toThrow(/primary family is IPv6.*; nothing on the host was changed$/);
  });
});
