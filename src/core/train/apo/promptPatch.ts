import { createTwoFilesPatch } from 'diff';

/** A unified diff of a prompt rewrite, as `diff -u` or git would show it; `label` names the file (or lab.json entry). */
export function promptPatch(label: string, before: string, after: string, headers: { before?: string; after?: string } = {}): string {
  return createTwoFilesPatch(`a/${label}`, `b/${label}`, withEol(before), withEol(after), headers.before, headers.after, { context: 3 });
}

/** A text without a final newline would print "\ No newline at end of file" on both sides of an inline prompt. */
function withEol(text: string): string {
  return text.endsWith('\n') ? text : `${text}\n`;
}
