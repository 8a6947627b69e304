/**
 * C0 controls (ESC, BEL, CR, backspace…), DEL, C1 controls and the bidi
 * overrides that reorder what a terminal shows; newline and tab are matched
 * too and let through where the text may span lines.
 */
const CONTROLS = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/**
 * C0 as `\x1b`; DEL, C1 and bidi as `\u0085`, which is also a valid escape
 * inside a JSON string (JSON.stringify leaves those characters raw), so
 * escaping --json output keeps it the same JSON.
 */
function visible(c: string): string {
  const code = c.charCodeAt(0);
  return NAMED[c] ?? (code < 0x20 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`);
}

/**
 * Text from traces, datasets or models made safe for a terminal: control
 * characters shown as visible escapes (`\x1b`, `\r`…), so a span name cannot
 * retitle, clear or recolour the user's terminal. `multiline` keeps newlines
 * and tabs (whole blocks of output); without it (one cell, one line) they are
 * escaped too.
 */
export function terminalSafe(text: string, opts: { multiline?: boolean } = {}): string {
  return text.replace(CONTROLS, (c) => (opts.multiline && (c === '\n' || c === '\t') ? c : visible(c)));
}
