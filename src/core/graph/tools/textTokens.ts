/**
 * Words that carry no topic in biomedical questions and abstracts; dropping
 * them keeps BM25 scores about the content words.
 */
const STOP_WORDS = new Set(
  (
    'a about above after again against all also am an and any are as at be because been before being below between both but by ' +
    'can could did do does doing done during each either few for from further had has have having he her here hers him his how ' +
    'i if in into is it its itself just may me might more most must my no nor not now of off on once only or other our ours out ' +
    'over own same she should so some such than that the their theirs them then there these they this those through to too under ' +
    'until up upon very was we were what when where whether which while who whom why will with within without would you your ' +
    'yes'
  ).split(' '),
);

/**
 * Plural folding after Harman's "S" stemmer: studies → study, cases → case,
 * patients → patient, leaving "us"/"ss" endings (virus, mass) alone. Light on
 * purpose: aggressive stemmers merge distinct biomedical terms.
 */
function stemPlural(word: string): string {
  if (word.length <= 3) return word;
  if (word.endsWith('ies') && !word.endsWith('eies') && !word.endsWith('aies')) return `${word.slice(0, -3)}y`;
  if (word.endsWith('es') && !/(?:aes|ees|oes)$/.test(word)) return word.slice(0, -1);
  if (word.endsWith('s') && !/(?:us|ss|is)$/.test(word)) return word.slice(0, -1);
  return word;
}

/** Lowercased, stop-word-free, plural-folded tokens of a text, in order. */
export function tokenize(text: string): string[] {
  const out: string[] = [];
  for (const raw of text.normalize('NFKC').toLowerCase().split(/[^\p{L}\p{N}]+/u)) {
    if (!raw || STOP_WORDS.has(raw)) continue;
    // Single letters are noise, but single digits matter ("type 2 diabetes").
    if (raw.length === 1 && !/\d/.test(raw)) continue;
    out.push(stemPlural(raw));
  }
  return out;
}
