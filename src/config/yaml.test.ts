import { describe, expect, it } from 'vitest';
import { DocumentError, MAX_DOCUMENT_BYTES, parseYamlDocument } from './yaml.js';

const parse = (text: string | Buffer) =>
  parseYamlDocument(Buffer.isBuffer(text) ? text : Buffer.from(text), 'site-config.yaml');

describe('parseYamlDocument', () => {
  it('reads plain YAML, keeping scalar aliases and core types', () => {
    expect(parse('a: &x 1\nb: *x\nc: [true, null, "on", 0x10]\n')).toEqual({ a: 1, b: 1, c: [true, null, 'on', 16] });
  });

  it.each([
    [
      'a map alias (the billion-laughs shape)',
      'a: &a {x: 1}\nb: [*a, *a, *a]\n',
      'YAML aliases of maps or lists are not allowed',
    ],
    [
      'a nested alias bomb',
      'a: &a [1,1,1,1,1,1,1,1,1]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n',
      'YAML aliases of maps or lists are not allowed',
    ],
    [
      'a merge key pulling a map in',
      'base: &b {x: 1}\nthis:\n  <<: *b\n',
      'YAML aliases of maps or lists are not allowed',
    ],
    ['a custom tag', 'a: !!js/function "function () {}"\n', 'not valid YAML'],
    ['a binary tag outside the core schema', 'a: !!binary aGVsbG8=\n', 'not valid YAML'],
    ['a duplicate key', 'a: 1\na: 2\n', 'duplicated mapping key (line 2, column 1)'],
    ['a list at the top', '- a\n- b\n', 'expected a mapping at the top level'],
    ['an empty file', '', 'expected a mapping at the top level'],
    ['flow lists nested beyond what the parser allows', `a: ${'['.repeat(2000)}${']'.repeat(2000)}`, 'not valid YAML'],
    [
      'a deep mapping',
      `${Array.from({ length: 80 }, (_, i) => `${'  '.repeat(i)}k${i}:`).join('\n')} 1\n`,
      'nested deeper than 64 levels',
    ],
  ])('refuses %s', (_what, text, message) => {
    expect(() => parse(text)).toThrow(DocumentError);
    expect(() => parse(text)).toThrow(message);
  });

  it('refuses aliases of one long string that expand far beyond the file, and keeps modest reuse', () => {
    const long = 'x'.repeat(20_000);
    const bomb = `a: &s ${long}\nb: [${Array.from({ length: 200 }, () => '*s').join(', ')}]\n`;
    expect(() => parse(bomb)).toThrow(/expands to more than 4 times its \d+ bytes \(aliases of long values\)/);
    const keys = `a: &s ${long}\nb:\n${Array.from({ length: 200 }, () => '  - {*s : 1}').join('\n')}\n`;
    expect(() => parse(keys)).toThrow('expands to more than 4 times');
    const reuse = `a: &s ${long}\nb: *s\nc: *s\n`;
    expect(parse(reuse)).toEqual({ a: long, b: long, c: long });
  });

  it.each([
    ['a NUL byte', Buffer.from('a: 1\n\0'), 'not a text file (NUL byte)'],
    ['invalid UTF-8', Buffer.from([0x61, 0x3a, 0x20, 0xff, 0xfe, 0x0a]), 'not valid UTF-8 text'],
    ['a file over the size limit', Buffer.alloc(MAX_DOCUMENT_BYTES + 1, 0x61), `the limit is ${MAX_DOCUMENT_BYTES}`],
  ])('refuses %s before parsing', (_what, bytes, message) => {
    expect(() => parse(bytes)).toThrow(message);
  });

  it('names the file in every error', () => {
    expect(() => parse('- x\n')).toThrow(/^site-config\.yaml: /);
  });
});
