import type { PromptVersionStats } from '../../core/analysis/promptStats';
import { decisionAlignment, type DecisionLabels } from '../../core/data/decisionAlignment';
import type { RolloutRecord } from '../../core/store/types';
import { compactStats } from '../view/promptDiff';
import { formatAgo, shortHash } from '../view/promptLens';
import { statusText } from '../../core/store/failureKinds';
import { duration } from '../../core/analysis/numberFormat';
import { formatReward, statusIcon } from '../view/rolloutPresentation';

/**
 * The rows of the prompt-history pickers (a version's rollouts, an agent's
 * versions), as plain data the QuickPick shows. Pure: no vscode.
 */

export interface RolloutPickRow {
  label: string;
  description: string;
  detail: string;
  rolloutId: string;
  mark: 'best' | 'worst' | null;
}

/** "GO · expected yes, aligned", "no decision", "NO-GO". */
export function decisionText(r: Pick<RolloutRecord, 'decision' | 'expectedDecision'>, labels?: DecisionLabels): string {
  const decision = r.decision ?? 'no decision';
  if (!r.expectedDecision) return decision;
  const a = decisionAlignment(r.decision, r.expectedDecision, labels);
  return `${decision} · expected ${r.expectedDecision}${a === 'aligned' || a === 'misaligned' ? `, ${a}` : ''}`;
}

/**
 * One row per rollout, newest first; the highest and the lowest final
 * reward are marked (only when they differ, so one rollout is neither).
 */
/** `labels`: the decision mapping the lab's graph declares (decisionLabelsOf). */
export function rolloutPickRows(rollouts: readonly RolloutRecord[], now: number, labels?: DecisionLabels): RolloutPickRow[] {
  const rewarded = rollouts.filter((r) => typeof r.finalReward === 'number');
  let best: RolloutRecord | undefined;
  let worst: RolloutRecord | undefined;
  for (const r of rewarded) {
    if (!best || r.finalReward! > best.finalReward!) best = r;
    if (!worst || r.finalReward! < worst.finalReward!) worst = r;
  }
  if (best && worst && best.finalReward === worst.finalReward) best = worst = undefined;
  return [...rollouts]
    .sort((a, b) => b.startTime - a.startTime)
    .map((r) => {
      const mark = r === best ? 'best' : r === worst ? 'worst' : null;
      const markText = mark === 'best' ? '  $(arrow-up) best' : mark === 'worst' ? '  $(arrow-down) worst' : '';
      const time = r.endTime !== null ? duration(Math.max(0, r.endTime - r.startTime)) : 'running';
      return {
        label: `$(${statusIcon(r.status).icon}) reward ${formatReward(r.finalReward)}${markText}`,
        description: decisionText(r, labels),
        detail: `task ${r.taskId}${r.sample > 0 ? ` #${r.sample}` : ''} · ${statusText(r)}${r.judgeFailed ? ' (judge failed)' : ''} · ${time} · ${formatAgo(r.startTime, now)}`,
        rolloutId: r.id,
        mark,
      };
    });
}

export interface VersionPickRow {
  label: string;
  description: string;
  detail: string;
  version: string;
}

function firstLine(text: string | undefined): string {
  const line = (text ?? '').split(/\r?\n/).find((l) => l.trim() !== '')?.trim() ?? '';
  return line.length > 80 ? `${line.slice(0, 79)}…` : line;
}

/**
 * One row per stored version, newest first: its reward statistics, when it
 * was first seen and last ran, its first line; the best and the current
 * text's version are marked.
 */
export function versionPickRows(
  stats: readonly PromptVersionStats[],
  best: string | null,
  current: string | null,
  now: number,
  opts: { currentLast?: boolean } = {},
): VersionPickRow[] {
  const sorted = [...stats].sort((a, b) => b.firstSeen - a.firstSeen);
  // Comparing (or restoring) the current text with itself shows nothing: the previous version comes first, the current one last.
  if (opts.currentLast) sorted.sort((a, b) => Number(a.version === current) - Number(b.version === current));
  return sorted
    .map((s) => {
      const currentMark = s.version === current ? (opts.currentLast ? '(current — the same text)' : '(current)') : '';
      const marks = [s.version === best ? '$(star-full) best' : '', currentMark].filter(Boolean).join(' ');
      const description = [compactStats(s), s.decisionAlignment !== null ? `alignment ${Math.round(s.decisionAlignment)}%` : ''].filter(Boolean).join(' · ');
      const when = [`first seen ${formatAgo(s.firstSeen, now)}`, s.lastRun !== null ? `last run ${formatAgo(s.lastRun, now)}` : ''].filter(Boolean).join(' · ');
      const line = firstLine(s.text);
      return { label: `${shortHash(s.version)}${marks ? `  ${marks}` : ''}`, description, detail: line ? `${when} · ${line}` : when, version: s.version };
    });
}
