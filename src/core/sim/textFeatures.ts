/**
 * Cheap text features the simulated endpoint builds its answers from: key
 * phrases, named proteins and genes, sentences, the polarity of a finding.
 * Crude on purpose: answers only need to follow their input, not be right.
 */

const STOPWORDS = new Set(
  `a about above after again against all also am an and any are as at be because been before being below between both but by
can could did do does doing done down during each either few for from further had has have having he her here hers him his how
however i if in into is it its itself just may might more most much must my neither no nor not now of off on once only or other
our out over own per same she should so some such than that the their them then there these they this those through thus to too
under until up upon us very via was we were what when where whether which while who whom why will with within without would
you your yet whose among amongst across toward towards onto
play plays played role roles use used using uses show shows showed shown compare compared comparing evaluate evaluated assess
assessed investigate investigated determine determined examine examined include included including perform performed find
found aim aimed aims objective objectives purpose background method methods result results conclusion conclusions study studies
studied patient patients data analysis analyses group groups total number year years month months week weeks day days case
cases whereas therefore respectively although versus vs whether based related associated association effect effects factor
factors difference differences level levels rate rates value values significant significantly p
first second third new high low higher lower different general overall main major minor several various other others
well good poor less least more most many mean median following previous present current recent potential possible
context goal question hypothesis hypotheses research idea task answer`
    .split(/\s+/)
    .filter(Boolean),
);

const TOKEN_RE = /[A-Za-z\u00C0-\u024F\u0370-\u03FF][A-Za-z0-9\u00C0-\u024F\u0370-\u03FF'-]*|\d+(?:\.\d+)?%?|[.,;:!?()[\]"]/g;

export interface Phrase {
  /** As written in the text, acronyms kept, other words lowercased. */
  text: string;
  score: number;
}

/**
 * Noun-phrase-like runs of 1–3 content words, best first: frequent in the
 * text, present in the goal, and longer rank higher.
 */
export function keyPhrases(text: string, goal: string, max = 10): Phrase[] {
  const goalLower = goal.toLowerCase();
  const counts = new Map<string, { text: string; count: number }>();
  let run: string[] = [];
  const flush = (): void => {
    for (let len = Math.min(3, run.length); len >= 1; len--) {
      for (let i = 0; i + len <= run.length; i++) {
        const words = run.slice(i, i + len);
        if (len === 1 && words[0]!.length < 4 && !isAcronym(words[0]!)) continue;
        const shown = words.map(displayWord).join(' ');
        const key = shown.toLowerCase();
        const e = counts.get(key);
        if (e) e.count++;
        else counts.set(key, { text: shown, count: 1 });
      }
    }
    run = [];
  };
  for (const tok of text.match(TOKEN_RE) ?? []) {
    const isWord = /^[^\d.,;:!?()[\]"]/.test(tok);
    if (isWord && tok.length > 1 && !STOPWORDS.has(tok.toLowerCase())) run.push(tok);
    else flush();
  }
  flush();
  const phrases: Phrase[] = [];
  for (const [key, e] of counts) {
    const len = key.split(' ').length;
    const inGoal = goalLower.includes(key) ? 2 : 0;
    phrases.push({ text: e.text, score: e.count + inGoal + 1.2 * (len - 1) });
  }
  phrases.sort((a, b) => b.score - a.score || a.text.localeCompare(b.text));
  // Drop phrases contained in a better one so the list is not "x", "x y", "x y z".
  const out: Phrase[] = [];
  for (const p of phrases) {
    const lower = p.text.toLowerCase();
    if (out.some((q) => q.text.toLowerCase().includes(lower) || lower.includes(q.text.toLowerCase()))) continue;
    out.push(p);
    if (out.length >= max) break;
  }
  return out;
}

function isAcronym(w: string): boolean {
  return /[A-Z].*[A-Z0-9]|\d/.test(w.slice(1)) || /^[A-Z]{2,}$/.test(w);
}

function displayWord(w: string): string {
  return isAcronym(w) ? w : w.toLowerCase();
}

const KNOWN_ENTITIES: Array<[RegExp, string]> = [
  [/\bAPOE[- ]?(?:ε|e)?4\b/i, 'APOE4'],
  [/\bAPOE\b/i, 'APOE'],
  [/\bTREM2\b/i, 'TREM2'],
  [/\b(?:amyloid[- ]beta|amyloid[- ]β|Aβ|abeta)\b/i, 'amyloid-beta'],
  [/\btau\b/i, 'tau'],
  [/\bGLP-?1\b/i, 'GLP-1'],
  [/\b(?:alpha|α)-?synuclein\b/i, 'alpha-synuclein'],
  [/\bBDNF\b/, 'BDNF'],
  [/\binsulin\b/i, 'insulin'],
  [/\bTNF(?:-?(?:alpha|α))?\b/i, 'TNF-alpha'],
  [/\bIL-?6\b/, 'IL-6'],
  [/\bp53\b/, 'p53'],
  [/\bEGFR\b/, 'EGFR'],
  [/\bVEGF\b/, 'VEGF'],
  [/\bPCSK9\b/, 'PCSK9'],
  [/\bHER2\b/, 'HER2'],
];
const GENE_SYMBOL_RE = /\b[A-Z]{2,6}[0-9]{1,2}[A-Z]?\b/g;

/** Proteins and genes named in the text: the lab's known targets first, then gene-like symbols. */
export function findEntities(text: string): string[] {
  const out: string[] = [];
  for (const [re, name] of KNOWN_ENTITIES) if (re.test(text) && !out.includes(name)) out.push(name);
  for (const m of text.match(GENE_SYMBOL_RE) ?? []) if (!out.includes(m)) out.push(m);
  return out;
}

export function sentences(text: string): string[] {
  return text
    .replace(/\s+/g, ' ')
    .split(/(?<=[.!?])\s+(?=[A-Z(])/)
    .map((s) => s.trim())
    .filter((s) => s.length > 20);
}

/** Lowercase content words, for overlap measures. */
export function contentWords(text: string): Set<string> {
  const out = new Set<string>();
  for (const tok of text.toLowerCase().match(/[a-z][a-z0-9-]{2,}/g) ?? []) if (!STOPWORDS.has(tok)) out.add(tok);
  return out;
}

/** Share of `a`'s content words that also occur in `b`. */
export function overlap(a: Set<string>, b: Set<string>): number {
  if (!a.size) return 0;
  let n = 0;
  for (const w of a) if (b.has(w)) n++;
  return n / a.size;
}

const NEGATIVE_FINDING = [
  /\bno (?:statistically )?significant/g,
  /\bnot (?:statistically )?significant/g,
  /\bnon-?significant/g,
  /\bdid not\b/g,
  /\bno difference/g,
  /\bnot differ/g,
  /\bno association/g,
  /\bnot associated/g,
  /\bfailed to\b/g,
  /\bno evidence/g,
  /\bsimilar\b/g,
  /\bcomparable\b/g,
  /\bp\s*>\s*0?\.\d/g,
];
const POSITIVE_FINDING = [
  /\bsignificant(?:ly)?\b/g,
  /\bassociated with\b/g,
  /\bimprove[sd]?\b/g,
  /\bincrease[sd]?\b/g,
  /\breduce[sd]?\b/g,
  /\beffective\b/g,
  /\bpredict/g,
  /\bcorrelat/g,
  /\bhigher\b/g,
  /\blower\b/g,
  /\bbenefit/g,
  /\bindependent/g,
  /\bp\s*<\s*0?\.0/g,
];

/**
 * Whether the text reads like a positive finding. Negative cues weigh 1.5×
 * because "significantly" also appears inside "not significantly".
 */
export function findingPolarity(text: string): { positive: number; negative: number; isPositive: boolean } {
  const t = text.toLowerCase();
  const count = (res: RegExp[]): number => res.reduce((n, re) => n + (t.match(re)?.length ?? 0), 0);
  const positive = count(POSITIVE_FINDING);
  const negative = count(NEGATIVE_FINDING);
  return { positive, negative, isPositive: positive >= 1.5 * negative };
}

/** "Do X cause Y?" → "X cause Y": the claim a yes/no research question asks about. */
export function questionToClaim(goal: string): string {
  const q = goal.trim().replace(/\s+/g, ' ').replace(/[?.!]+$/, '');
  const m = /^(?:do|does|did|is|are|was|were|can|could|should|will|would|has|have|may)\s+(.+)$/i.exec(q);
  const claim = m ? m[1]! : q;
  return claim.charAt(0).toLowerCase() + claim.slice(1);
}

/**
 * Labelled parts of a prompt: a line "Goal: ...", "## Context", "Context:" starts
 * a section that runs to the next label. Keys are lowercased labels.
 */
export function labelledSections(text: string): Map<string, string> {
  const out = new Map<string, string>();
  let current: string | null = null;
  let buf: string[] = [];
  const close = (): void => {
    if (current !== null) out.set(current, [out.get(current), buf.join('\n').trim()].filter(Boolean).join('\n'));
    buf = [];
  };
  for (const line of text.split('\n')) {
    const m = /^\s*(?:#{1,6}\s*)?([A-Za-z][A-Za-z /_-]{1,40}?)\s*(?::\s*(.*)|$)/.exec(line);
    // ALL-CAPS labels ("RESULTS: ...") are abstract headings inside a context, not prompt sections.
    const isLabel = m !== null && (m[2] !== undefined || /^\s*#/.test(line)) && m[1]! !== m[1]!.toUpperCase();
    const label = isLabel ? m![1]!.trim().toLowerCase() : null;
    if (label !== null && label.split(' ').length <= 4) {
      close();
      current = label;
      if (m![2]) buf.push(m![2]);
    } else {
      buf.push(line);
    }
  }
  close();
  return out;
}

/** The first section whose label matches. */
export function sectionMatching(sections: Map<string, string>, re: RegExp): string | undefined {
  for (const [label, body] of sections) if (re.test(label) && body.trim()) return body;
  return undefined;
}

/** Tokens for usage counts and logprobs: words and punctuation, each with its leading whitespace. */
export function tokenize(text: string): string[] {
  return text.match(/\s*[\p{L}\p{N}_]+|\s*[^\s\p{L}\p{N}_]|\s+$/gu) ?? [];
}
