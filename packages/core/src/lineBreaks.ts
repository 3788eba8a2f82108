/**
 * The characters JSON leaves unescaped in strings that line readers still take for a line end:
 * NEL (U+0085), LINE SEPARATOR (U+2028) and PARAGRAPH SEPARATOR (U+2029). Unicode's line
 * boundaries (TR18) include them, and so do nedb's loader, Python's `str.splitlines` and many log
 * shippers. JSON.stringify escapes every other such character (\n, \r, \v, \f, the C0 controls).
 */
const LINE_BREAKS = /[\u0085\u2028\u2029]/g;
const HAS_LINE_BREAK = new RegExp(LINE_BREAKS.source);

const escaped = (c: string): string => (c === '\u0085' ? '\\u0085' : c === '\u2028' ? '\\u2028' : '\\u2029');

/**
 * A JSON text with NEL, LINE SEPARATOR and PARAGRAPH SEPARATOR written as `\u` escapes: the same
 * value for any JSON parser, and one line for any line reader. JSON cannot hold them outside
 * strings, so escaping them anywhere in a JSON text changes only how its strings are written. A
 * text without them (almost every one) is answered as it is, after one test. For every JSON line
 * svc writes to a file or a log (data files, exports and backups, log lines).
 */
export function escapeLineBreaks(json: string): string {
  return HAS_LINE_BREAK.test(json) ? json.replace(LINE_BREAKS, escaped) : json;
}
