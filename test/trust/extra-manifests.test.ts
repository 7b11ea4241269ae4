/**
 * Extra manifests on a signed stick, through the built executable: the signature covers each
 * manifest file exactly as it covers the native site-config's files and the image-based install's
 * manifest.json, so adding, removing or altering one after signing is refused with exit 3, on
 * either kind of media.
 */
import {
  appendFileSync,
  cpSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { layFactoryNode } from '../fixtures/factory-node.js';
import { EXAMPLE, REPO, runCli } from '../helpers/cli.js';

const MEDIA = {
  native: { source: EXAMPLE, files: 4 },
  'image-based install': { source: path.join(REPO, 'examples/ibi-config-media'), files: 2 },
};
const CONFIG_MAP = (name: string) =>
  `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n  namespace: openshift-config\ndata:\n  a: b\n`;

let work: string;
let root: string;
let n = 0;

beforeAll(() => {
  work = mkdtempSync(path.join(tmpdir(), 'trust-extra-'));
  root = path.join(work, 'root');
  layFactoryNode(root);
  expect(runCli(['keygen', '--out', path.join(work, 'factory')]).code).toBe(0);
  mkdirSync(path.join(root, 'etc/sno-relocate/trust'), { recursive: true });
  cpSync(path.join(work, 'factory.pub'), path.join(root, 'etc/sno-relocate/trust/factory.pub'));
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** A copy of the media with two extra manifest files, signed. */
function signedMedia(source: string): string {
  const dir = path.join(work, `media-${++n}`);
  cpSync(source, dir, { recursive: true });
  mkdirSync(path.join(dir, 'extra-manifests'));
  writeFileSync(path.join(dir, 'extra-manifests/10-site.yaml'), `${CONFIG_MAP('one')}---\n${CONFIG_MAP('two')}`);
  writeFileSync(path.join(dir, 'extra-manifests/20-site.yaml'), CONFIG_MAP('three'));
  const signed = runCli(['sign', '--key', path.join(work, 'factory.key'), dir]);
  expect(signed.code, signed.stderr).toBe(0);
  return dir;
}

describe.each(Object.entries(MEDIA))('extra manifests on %s media', (_kind, { source, files }) => {
  it('are covered by the signature, each file', () => {
    const dir = signedMedia(source);
    const signed = runCli(['sign', '--key', path.join(work, 'factory.key'), dir]);
    expect(signed.stdout).toContain(`signed ${files + 2} file(s)`);
    const validate = runCli(['validate', dir, '--root', root]);
    expect(validate.code, validate.stderr).toBe(0);
  });

  it.each([
    [
      'one added',
      (dir: string) => writeFileSync(path.join(dir, 'extra-manifests/30-added.yaml'), CONFIG_MAP('four')),
      'file extra-manifests/30-added.yaml is not covered by the signature',
    ],
    [
      'one removed',
      (dir: string) => unlinkSync(path.join(dir, 'extra-manifests/20-site.yaml')),
      'file extra-manifests/20-site.yaml is covered by the signature but missing',
    ],
    [
      'one altered',
      (dir: string) => appendFileSync(path.join(dir, 'extra-manifests/10-site.yaml'), `---\n${CONFIG_MAP('extra')}`),
      'file extra-manifests/10-site.yaml changed after signing',
    ],
  ])('refuse the stick with %s after signing', (_what, change, reason) => {
    const dir = signedMedia(source);
    change(dir);
    const refused = runCli(['validate', dir, '--root', root]);
    expect(refused.code).toBe(3);
    expect(refused.stderr).toContain(reason);
  });
});

describe('extra manifests in a fleet template', () => {
  it('are filled in per site, validated and signed by render', () => {
    const template = path.join(work, 'template');
    cpSync(path.join(REPO, 'examples/fleet/template'), template, { recursive: true });
    mkdirSync(path.join(template, 'extra-manifests'));
    writeFileSync(path.join(template, 'extra-manifests/10-site.yaml'), CONFIG_MAP('site-{{ site }}'));
    const out = path.join(work, 'fleet');
    const rendered = runCli(
      [
        'render',
        '--inventory',
        path.join(REPO, 'examples/fleet/inventory.csv'),
        '--template',
        template,
        '--out',
        out,
        '--key',
        path.join(work, 'factory.key'),
      ],
      { timeoutMs: 60_000 },
    );
    expect(rendered.code, rendered.stderr).toBe(0);
    const site = path.join(out, 'store-0043');
    expect(readFileSync(path.join(site, 'extra-manifests/10-site.yaml'), 'utf8')).toContain('name: site-store-0043');
    const signature = JSON.parse(readFileSync(path.join(site, 'site-config.sig'), 'utf8')) as {
      signed: { files: { name: string }[] };
    };
    expect(signature.signed.files.map((f) => f.name)).toContain('extra-manifests/10-site.yaml');
    expect(runCli(['validate', site, '--root', root]).code).toBe(0);
  });
});
