import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Finding } from '../base/findings.js';
import { manifestAt, readExtraManifests } from './extra-manifests.js';

let dir: string;
afterEach(() => rmSync(dir, { recursive: true, force: true }));

async function read(files: Record<string, string>) {
  dir = mkdtempSync(path.join(tmpdir(), 'extra-'));
  mkdirSync(path.join(dir, 'extra-manifests'));
  for (const [name, text] of Object.entries(files)) writeFileSync(path.join(dir, 'extra-manifests', name), text);
  const findings: Finding[] = [];
  const read: string[] = [];
  const manifests = await readExtraManifests(
    {
      realDir: dir,
      read: (_at, name) => {
        read.push(name);
        return readFile(path.join(dir, name));
      },
    },
    findings,
  );
  return { manifests, findings, read };
}

const cm = (name: string) => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n  namespace: default\n`;
const crd = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec: {group: example.com, names: {kind: Widget, plural: widgets}, scope: Namespaced, versions: []}
`;

describe('extra manifests', () => {
  it('reads .yaml, .yml and .json files in name order, every document, keeping document indexes', async () => {
    const {
      manifests,
      findings,
      read: files,
    } = await read({
      '20-b.yml': `---\n${cm('b0')}---\n---\n${cm('b2')}`,
      '10-a.yaml': cm('a0'),
      '30-c.json': JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'c' } }),
      'README.md': '# notes',
    });
    expect(manifests.map((m) => `${manifestAt(m)} ${m.object.metadata.name}`)).toEqual([
      'extra-manifests/10-a.yaml[0] a0',
      'extra-manifests/20-b.yml[0] b0',
      'extra-manifests/20-b.yml[2] b2',
      'extra-manifests/30-c.json[0] c',
    ]);
    expect(files).toEqual(['extra-manifests/10-a.yaml', 'extra-manifests/20-b.yml', 'extra-manifests/30-c.json']);
    expect(findings).toEqual([
      { severity: 'warning', path: 'extra-manifests/README.md', message: expect.stringContaining('ignored') },
    ]);
  });

  it.each([
    ['no apiVersion', `kind: ConfigMap\nmetadata: {name: x}\n`, 'extra-manifests/m.yaml[0]: $.apiVersion'],
    ['no kind', `apiVersion: v1\nmetadata: {name: x}\n`, 'extra-manifests/m.yaml[0]: $.kind'],
    ['no metadata', `apiVersion: v1\nkind: ConfigMap\n`, 'extra-manifests/m.yaml[0]: $.metadata'],
    [
      'only generateName',
      `${cm('a')}---\napiVersion: v1\nkind: ConfigMap\nmetadata: {generateName: x-}\n`,
      'extra-manifests/m.yaml[1]: $.metadata.name',
    ],
    ['a list', `- a\n- b\n`, 'extra-manifests/m.yaml[0]: $'],
    ['unparsable YAML in the third document', `${cm('a')}---\n${cm('b')}---\nkind: [\n`, 'extra-manifests/m.yaml[2]'],
    ['unparsable YAML after a leading separator', `---\n${cm('a')}---\nkind: : x\n`, 'extra-manifests/m.yaml[1]'],
    ['the same object twice', `${cm('a')}---\n${cm('a')}`, 'extra-manifests/m.yaml[1]'],
  ])('refuses %s, naming file and document index', async (_what, text, at) => {
    const { findings } = await read({ 'm.yaml': text });
    expect(findings.filter((f) => f.severity === 'error').map((f) => f.path)).toEqual([at]);
  });

  it('refuses a custom resource whose CRD comes after it in name order', async () => {
    const { findings } = await read({
      '10-widget.yaml': 'apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: default}\n',
      '20-crd.yaml': crd,
    });
    expect(findings).toEqual([
      {
        severity: 'error',
        path: 'extra-manifests/10-widget.yaml[0]',
        message: expect.stringContaining('installed by extra-manifests/20-crd.yaml[0], which comes after it'),
      },
    ]);
  });

  it('never quotes a Secret’s value in a parse error', async () => {
    const { findings } = await read({ 's.yaml': 'apiVersion: v1\nkind: Secret\nstringData:\n  token: "hunter2\n' });
    expect(findings).toHaveLength(1);
    expect(JSON.stringify(findings)).not.toContain('hunter2');
  });

  it('has none when the folder is missing', async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'extra-'));
    const findings: Finding[] = [];
    expect(
      await readExtraManifests({ realDir: dir, read: () => Promise.reject(new Error('unused')) }, findings),
    ).toEqual([]);
    expect(findings).toEqual([]);
  });
});
