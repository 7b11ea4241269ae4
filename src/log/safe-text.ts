/**
 * The one place text is made safe for a terminal and for the journal. Whatever reaches the console,
 * a log line or a printed finding may hold text from a stick, a file name or the cluster: a control
 * character in it could clear the screen, move the cursor and paint a fake line, or start a forged
 * journal line. Every C0 and C1 control, DEL, the Unicode line separators and the bidirectional
 * overrides (which reorder what is shown) are written as visible escapes instead.
 */
const CONTROLS = '\\u0000-\\u0008\\u000b-\\u001f\\u007f-\\u009f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069';
const UNSAFE_IN_LINE = new RegExp(`[${CONTROLS}\\t\\n]`, 'gu');
const UNSAFE_IN_TEXT = new RegExp(`[${CONTROLS}]`, 'gu');

const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

function escape(char: string): string {
  const named = NAMED[char];
  if (named) return named;
  const code = char.codePointAt(0)!;
  return code < 0x100 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
}

/** One line: every control character, newlines and tabs included, escaped. */
export function safeLine(text: string): string {
  return text.replace(UNSAFE_IN_LINE, escape);
}

/** Text of several lines (a command's output): newlines and tabs kept, every other control escaped. */
export function safeText(text: string): string {
  return text.replace(UNSAFE_IN_TEXT, escape);
}
