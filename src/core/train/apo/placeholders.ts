import { promptHash } from '../../config/loader';
import { PLACEHOLDER_RE } from './apoWire';

/** The placeholders of a prompt (`{name}`, `{{name}}`), each once, in order of appearance; spaces inside `{{ }}` do not count. */
export function promptPlaceholders(text: string): string[] {
  return [...new Set((text.match(PLACEHOLDER_RE) ?? []).map(normalise))];
}

/** Placeholders of `original` that `candidate` no longer has. */
export function missingPlaceholders(original: string, candidate: string): string[] {
  const kept = new Set(promptPlaceholders(candidate));
  return promptPlaceholders(original).filter((p) => !kept.has(p));
}

export interface ScreenedCandidate {
  text: string;
  version: string;
  /** Why the candidate is not scored; absent when it is. */
  error?: string;
}

/**
 * Turns an editor's rewrites into candidates worth scoring. Each is trimmed
 * and ends as the original does (with or without a final newline), so the
 * text scored is byte for byte the text applied later. A rewrite that is
 * empty or drops a placeholder of the original is kept with its error; one
 * that repeats a prompt already in `seen` (the original, earlier candidates)
 * is left out. `seen` (prompt versions) gains each new candidate.
 */
export function screenCandidates(original: string, rewrites: readonly unknown[], seen: Set<string>): ScreenedCandidate[] {
  const out: ScreenedCandidate[] = [];
  const ending = /\r?\n$/.exec(original)?.[0] ?? '';
  for (const raw of rewrites) {
    const body = typeof raw === 'string' ? raw.trim() : '';
    if (!body) {
      out.push({ text: '', version: '', error: 'the editor returned an empty prompt' });
      continue;
    }
    const text = body + ending;
    const version = promptHash(text);
    if (seen.has(version)) continue;
    seen.add(version);
    const missing = missingPlaceholders(original, text);
    if (missing.length) {
      out.push({ text, version, error: `drops the placeholder${missing.length > 1 ? 's' : ''} ${missing.join(', ')} of the original` });
      continue;
    }
    out.push({ text, version });
  }
  return out;
}

function normalise(token: string): string {
  return token.replace(/\s+/g, '');
}
