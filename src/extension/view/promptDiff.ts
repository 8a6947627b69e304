import { diffLines } from 'diff';
import type { PromptVersionStats } from '../../core/analysis/promptStats';
import { escapeMarkdown } from './rolloutPresentation';
import { rewardWithInterval, shortHash } from './promptLens';

/**
 * Where the current text of a prompt differs from another version's, and the
 * words that go with it (the diff editor's title, the marker's hover). Pure:
 * no vscode.
 */

/** A run of lines of the current text (0-based, both ends included) that the other version does not have as they are. */
export interface PromptLineChange {
  /** 'added': lines the other version lacks; 'modified': lines that replace some of its lines; 'deleted': its lines removed just before `startLine`. */
  kind: 'added' | 'modified' | 'deleted';
  startLine: number;
  endLine: number;
}

function normalise(text: string): string {
  return text.replace(/^\uFEFF/, '').replace(/\r\n?/g, '\n');
}

/** How many lines `text` has as an editor counts them ("" is one line, a trailing newline opens one more). */
function editorLineCount(text: string): number {
  let n = 1;
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 10) n++;
  return n;
}

/**
 * The lines of `current` that differ from `base`, as an editor shows them.
 * Line endings and a missing newline at the end are not differences, as for
 * the prompt hash.
 */
export function changedLines(base: string, current: string): PromptLineChange[] {
  const cur = normalise(current);
  const parts = diffLines(normalise(base), cur, { ignoreNewlineAtEof: true });
  const lastLine = editorLineCount(cur) - 1;
  const out: PromptLineChange[] = [];
  let line = 0;
  for (let i = 0; i < parts.length; i++) {
    const p = parts[i]!;
    if (p.added) {
      // A removal right before an addition is one replaced block: "modified".
      const replaced = i > 0 && parts[i - 1]!.removed;
      out.push({ kind: replaced ? 'modified' : 'added', startLine: line, endLine: line + p.count - 1 });
      line += p.count;
    } else if (p.removed) {
      if (parts[i + 1]?.added) continue;
      const at = Math.min(line, lastLine);
      out.push({ kind: 'deleted', startLine: at, endLine: at });
    } else {
      line += p.count;
    }
  }
  return out;
}

/** Whether line `line` is part of one of `changes`. */
export function isChangedLine(changes: readonly PromptLineChange[], line: number): boolean {
  return changes.some((c) => line >= c.startLine && line <= c.endLine);
}

/** "0.71 ± 0.05, n=12", "1.00 (0.57–1.00), n=5", "0.71, n=1", or "no rollouts" for a version nothing has scored. */
export function compactStats(s: Pick<PromptVersionStats, 'meanReward' | 'ci' | 'rollouts'> | null): string {
  if (!s || s.rollouts === 0) return 'no rollouts';
  if (s.meanReward === null) return `n/a, n=${s.rollouts}`;
  return `${rewardWithInterval(s.meanReward, s.ci)}, n=${s.rollouts}`;
}

/** The diff editor's title: "Supervisor abc1234 (0.71 ± 0.05, n=12) ↔ current (0.80 ± 0.03, n=9)". */
export function promptDiffTitle(agent: string, version: string, versionStats: PromptVersionStats | null, currentStats: PromptVersionStats | null): string {
  return `${agent} ${shortHash(version)} (${compactStats(versionStats)}) ↔ current (${compactStats(currentStats)})`;
}

/**
 * A `command:` link for trusted Markdown: the argument is passed as one JSON
 * value. Parentheses are escaped too (encodeURIComponent keeps them), or a
 * path like "/w (copy)" would end the Markdown link early.
 */
export function commandLink(command: string, arg: unknown): string {
  const query = encodeURIComponent(JSON.stringify([arg])).replace(/[()]/g, (c) => (c === '(' ? '%28' : '%29'));
  return `command:${command}?${query}`;
}

/** The argument-object form of the prompt-history commands. */
export interface PromptVersionRef {
  folder: string;
  agent: string;
  version: string;
}

/** The hover on the lines that differ from the best version, with a link that opens the diff against it. */
export function differsFromBestMarkdown(best: PromptVersionStats, ref: PromptVersionRef): string {
  const stats = best.meanReward === null ? `n=${best.rollouts}` : `mean ${compactStats(best)}`;
  return `Differs from best version \`${shortHash(best.version)}\` (${escapeMarkdown(stats)}) — [Compare with Version…](${commandLink('rolloutLab.comparePromptWithVersion', ref)})`;
}

/** The links under the statistics hover: the version's rollouts and the prompt history. */
export function versionLinksMarkdown(ref: PromptVersionRef | null, agent: { folder: string; agent: string }): string {
  const links: string[] = [];
  if (ref) links.push(`[Show rollouts of this version](${commandLink('rolloutLab.showPromptVersionRollouts', ref)})`);
  links.push(`[Compare with Version…](${commandLink('rolloutLab.comparePromptWithVersion', agent)})`);
  return links.join(' · ');
}
