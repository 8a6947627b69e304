import { findNodeAtLocation, parseTree, printParseErrorCode, type Node, type ParseError } from 'jsonc-parser';

/** A 1-based line and column in a text file. */
export interface TextPosition {
  line: number;
  column: number;
}

/** A JSON(C) document parsed with positions, so errors can point at a line. */
export interface JsonDocument {
  readonly text: string;
  readonly root: Node | undefined;
  readonly syntaxErrors: ReadonlyArray<{ offset: number; length: number; position: TextPosition; message: string }>;
  /** Position of the value at a path, or of the closest enclosing value that exists. */
  positionOf(path: ReadonlyArray<string | number>): TextPosition | undefined;
  positionAt(offset: number): TextPosition;
}

/** What each parser error means and how to fix it, in words a config author understands. */
const SYNTAX_HINTS: Record<string, string> = {
  InvalidSymbol: 'unexpected character — check for a missing quote or a stray character',
  InvalidNumberFormat: 'invalid number — write numbers like 0.7 or 1200',
  PropertyNameExpected: 'expected a property name in double quotes — remove the extra comma or quote the key',
  ValueExpected: 'expected a value — add the missing value or remove the extra comma',
  ColonExpected: 'expected ":" after the property name',
  CommaExpected: 'expected a comma — add "," between the entries',
  CloseBraceExpected: 'expected "}" — close the object or add the missing comma',
  CloseBracketExpected: 'expected "]" — close the array or add the missing comma',
  EndOfFileExpected: 'unexpected text after the end — the file must hold exactly one JSON value',
  InvalidCommentToken: 'invalid comment — use // or /* */',
  UnexpectedEndOfComment: 'unterminated comment — close it with */',
  UnexpectedEndOfString: 'unterminated string — add the closing double quote',
  UnexpectedEndOfNumber: 'unterminated number',
  InvalidUnicode: 'invalid \\u escape — use four hex digits',
  InvalidEscapeCharacter: 'invalid escape — write a backslash as \\\\',
  InvalidCharacter: 'invalid character in a string — escape control characters such as tabs and newlines',
};

/**
 * Parses JSON with comments and trailing commas allowed (as VS Code's own
 * settings files do) and keeps node offsets: error messages can then name the
 * line, and object keys keep their file order (JSON.parse reorders
 * integer-like keys such as PubMed ids).
 */
export function parseJsonDocument(text: string): JsonDocument {
  const errors: ParseError[] = [];
  const root = parseTree(text, errors, { allowTrailingComma: true, disallowComments: false });
  const lineStarts = [0];
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 10) lineStarts.push(i + 1);
  const positionAt = (offset: number): TextPosition => {
    let lo = 0;
    let hi = lineStarts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (lineStarts[mid] <= offset) lo = mid;
      else hi = mid - 1;
    }
    return { line: lo + 1, column: offset - lineStarts[lo] + 1 };
  };
  return {
    text,
    root,
    syntaxErrors: errors.map((e) => {
      const code = printParseErrorCode(e.error);
      return { offset: e.offset, length: e.length, position: positionAt(e.offset), message: SYNTAX_HINTS[code] ?? code };
    }),
    positionAt,
    positionOf(path) {
      if (!root) return undefined;
      for (let n = path.length; n >= 0; n--) {
        const node = findNodeAtLocation(root, path.slice(0, n) as Array<string | number>);
        // A key's value node starts after the key; pointing at the key reads better.
        if (node) return positionAt(node.parent?.type === 'property' ? node.parent.offset : node.offset);
      }
      return undefined;
    },
  };
}
