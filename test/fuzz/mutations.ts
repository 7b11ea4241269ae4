/**
 * Hostile site-config folders, generated: a valid document with one part replaced, removed or
 * grown; its YAML text cut, spliced with YAML features or garbage; the files it names pointing out
 * of the folder. What a rogue or damaged stick could carry.
 */
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import yaml from 'js-yaml';
import { baseDocument } from '../invalid/corpus.js';

type Json = unknown;

/** Every path (list of keys) inside a value. */
function paths(value: Json, at: (string | number)[] = []): (string | number)[][] {
  if (value === null || typeof value !== 'object') return [at];
  const keys = Array.isArray(value) ? value.map((_, i) => i) : Object.keys(value);
  return [at, ...keys.flatMap((k) => paths((value as Record<string | number, Json>)[k], [...at, k]))];
}

function setAt(
  doc: Json,
  at: (string | number)[],
  edit: (parent: Record<string | number, Json>, key: string | number) => void,
): Json {
  if (at.length === 0) return doc;
  let parent = doc as Record<string | number, Json>;
  for (const key of at.slice(0, -1)) parent = parent[key] as Record<string | number, Json>;
  edit(parent, at.at(-1)!);
  return doc;
}

const BASE_PATHS = paths(baseDocument());

const hostileValue = fc.oneof(
  fc.anything({ maxDepth: 3 }),
  fc.string({ unit: 'binary', maxLength: 64 }),
  fc.constantFrom(
    '',
    ' ',
    '../../etc/shadow',
    '/etc/passwd',
    '0.0.0.0/0',
    '::',
    '999.1.1.1',
    '10.0.0.1/33',
    'a'.repeat(70_000),
    '\u0000',
    'localhost',
    '-----BEGIN PRIVATE KEY-----',
  ),
  fc.integer(),
  fc.double(),
  fc.constant(null),
  fc.nat(200).map((depth) => Array.from({ length: depth }).reduce<Json>((inner) => ({ n: inner }), 1)),
);

/** A document with one part replaced by a hostile value, removed, or given an unknown sibling. */
export const documentMutation = fc
  .tuple(
    fc.constantFrom(...BASE_PATHS),
    fc.constantFrom('replace', 'remove', 'add'),
    hostileValue,
    fc.string({ maxLength: 12 }),
  )
  .map(([at, how, value, extraKey]) =>
    setAt(baseDocument(), at, (parent, key) => {
      if (how === 'replace') parent[key] = value;
      else if (how === 'remove') Reflect.deleteProperty(parent, key);
      else if (typeof parent[key] === 'object' && parent[key] !== null && !Array.isArray(parent[key]))
        (parent[key] as Record<string, Json>)[extraKey || 'x'] = value;
      else parent[key] = value;
    }),
  );

const YAML_FEATURES = [
  '&a ',
  '*a',
  '!!binary ',
  '!custom ',
  '!!js/function ',
  '<<: *a\n',
  '? ',
  '---\n',
  '...\n',
  '%YAML 1.1\n',
  'a: &b [*b]\n',
  '{',
  ']',
  '\t',
  '"\\u0000"',
  'spec: {}\n',
];

/** The document's YAML with a YAML feature, a duplicate key, garbage or a cut spliced in. */
export const textMutation = fc
  .tuple(
    documentMutation,
    fc.nat(),
    fc.oneof(
      fc.constantFrom(...YAML_FEATURES),
      fc.string({ unit: 'binary', maxLength: 16 }),
      fc.uint8Array({ maxLength: 16 }).map((b) => Buffer.from(b).toString('latin1')),
    ),
    fc.constantFrom('insert', 'cut', 'duplicate'),
  )
  .map(([doc, at, piece, how]): Buffer => {
    const text = yaml.dump(doc, { noRefs: true, lineWidth: -1 });
    const i = at % (text.length + 1);
    if (how === 'cut') return Buffer.from(text.slice(0, i));
    if (how === 'duplicate') {
      const line = text.split('\n')[at % text.split('\n').length] ?? '';
      return Buffer.from(`${text}${line}\n`);
    }
    return Buffer.concat([Buffer.from(text.slice(0, i)), Buffer.from(piece, 'latin1'), Buffer.from(text.slice(i))]);
  });

export type Folder = { document: Buffer; files: Record<string, Buffer>; links: Record<string, string> };

/** A folder: the site-config and the files it names, some of them links out of the folder. */
export const folderMutation = fc
  .tuple(
    fc.oneof(
      documentMutation.map((d) => Buffer.from(yaml.dump(d, { noRefs: true, lineWidth: -1 }))),
      textMutation,
    ),
    fc.constantFrom(
      'network.yaml',
      '../network.yaml',
      '/etc/hostname',
      'sub/../network.yaml',
      'link.yaml',
      'missing.yaml',
      '.',
      '',
    ),
    fc.oneof(
      fc.constant('interfaces: []\n'),
      fc.string({ maxLength: 200 }),
      fc.constant('\xff\xfe'),
      fc.constant('a: &a [*a]\n'),
    ),
  )
  .map(([document, nmstateFile, nmstateText]): Folder => {
    const text = document.toString('utf8');
    const withFile =
      text.includes('nmstate:') && nmstateFile
        ? Buffer.from(
            text.replace(/^(\s+)nmstate:/m, `$1nmstateFile: ${JSON.stringify(nmstateFile)}\n$1nmstateUnused:`),
          )
        : document;
    return {
      document: withFile,
      files: { 'network.yaml': Buffer.from(nmstateText, 'latin1') },
      links: { 'link.yaml': '/etc/passwd' },
    };
  });

export function layFolder(dir: string, folder: Folder): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'site-config.yaml'), folder.document);
  for (const [name, data] of Object.entries(folder.files)) writeFileSync(path.join(dir, name), data);
  for (const [name, target] of Object.entries(folder.links)) symlinkSync(target, path.join(dir, name));
}
