import { describe, expect, it } from 'vitest';
import { safeLine, safeText } from './safe-text.js';

describe('safe text', () => {
  it.each([
    ['an escape sequence clearing the screen', '\u001b[2J\u001b[Hdone', '\\x1b[2J\\x1b[Hdone'],
    [
      'a newline forging a second line',
      'bad\nINFO  done: site store-0042 is configured',
      'bad\\nINFO  done: site store-0042 is configured',
    ],
    ['a carriage return overwriting the line', 'refused\rdone', 'refused\\rdone'],
    ['a C1 control sequence introducer', 'a\u009b2Jb', 'a\\x9b2Jb'],
    ['a right-to-left override', 'txt.\u202eexe', 'txt.\\u202eexe'],
    ['a line separator', 'a\u2028b', 'a\\u2028b'],
    ['DEL and NUL', 'a\u007f\u0000', 'a\\x7f\\x00'],
  ])('escapes %s in a line', (_what, input, shown) => {
    expect(safeLine(input)).toBe(shown);
  });

  it('keeps printable text, accents and emoji as they are', () => {
    expect(safeLine('site-config: café 東京 ✓ "quoted" = 1')).toBe('site-config: café 東京 ✓ "quoted" = 1');
  });

  it('keeps the lines of a text and escapes what is inside them', () => {
    expect(safeText('one\n\ttwo \u001b]0;title\u0007\n')).toBe('one\n\ttwo \\x1b]0;title\\x07\n');
  });
});
