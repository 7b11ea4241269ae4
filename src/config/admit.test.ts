/**
 * One admission for every command: the node's rules run after parse and rules, in the order fixed
 * here (trust, then what the time proves, then the factory record), and a refusal stops it there.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ConfigError, RefusedError } from '../base/errors.js';
import { type Admission, admitSite, offNode } from './admit.js';

const EXAMPLE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../examples/store-0042');

/** An admission whose rules note the site they were shown, and refuse where told to. */
type Rule = 'trust' | 'provenTime' | 'factoryRecord';
function recording(refuse?: Rule): { admission: Admission; ran: string[] } {
  const ran: string[] = [];
  const rule = (name: Rule) => async (loaded: { site: { name: string } }) => {
    ran.push(`${name}:${loaded.site.name}`);
    if (name === refuse) throw new RefusedError(`refused by ${name}`);
  };
  return {
    admission: {
      now: new Date(),
      trust: rule('trust'),
      provenTime: rule('provenTime'),
      factoryRecord: rule('factoryRecord'),
    },
    ran,
  };
}

describe('admitSite', () => {
  it('runs trust, then what the time proves, then the factory record, on the parsed site', async () => {
    const { admission, ran } = recording();
    await expect(admitSite(EXAMPLE, admission)).resolves.toMatchObject({ site: { name: 'store-0042' } });
    expect(ran).toEqual(['trust:store-0042', 'provenTime:store-0042', 'factoryRecord:store-0042']);
  });

  it('stops where the time proves something expired: the factory record is never weighed', async () => {
    const { admission, ran } = recording('provenTime');
    await expect(admitSite(EXAMPLE, admission)).rejects.toThrow('refused by provenTime');
    expect(ran).toEqual(['trust:store-0042', 'provenTime:store-0042']);
  });

  it('stops at an untrusted site-config: the factory record is never weighed', async () => {
    const { admission, ran } = recording('trust');
    await expect(admitSite(EXAMPLE, admission)).rejects.toThrow('refused by trust');
    expect(ran).toEqual(['trust:store-0042']);
  });

  it('runs no node rule on a site-config the rules refuse', async () => {
    const { admission, ran } = recording();
    await expect(admitSite(path.join(EXAMPLE, 'absent'), admission)).rejects.toBeInstanceOf(ConfigError);
    expect(ran).toEqual([]);
  });

  it('off the node, parses and checks by the rules only', async () => {
    await expect(admitSite(EXAMPLE, offNode(new Date()))).resolves.toMatchObject({ site: { name: 'store-0042' } });
  });
});
