import type { PromptVersionStats, VersionComparison } from '../../core/rollout/promptStats';
import { escapeMarkdown } from './rolloutPresentation';

/**
 * The text of the reward annotations on a prompt file (CodeLens titles and the
 * hover), from the statistics of the agent's prompt versions. Pure: no vscode.
 */

/** A version hash as shown: its first 7 hex digits, like a short git hash. */
export function shortHash(version: string): string {
  return version.slice(0, 7);
}

/** "just now", "5 min ago", "3 h ago", "2 days ago". */
export function formatAgo(then: number, now: number): string {
  const s = Math.max(0, (now - then) / 1000);
  if (s < 45) return 'just now';
  const min = Math.round(s / 60);
  if (min < 90) return `${Math.max(1, min)} min ago`;
  const h = Math.round(s / 3600);
  if (h < 48) return `${h} h ago`;
  return `${Math.round(s / 86_400)} days ago`;
}

function fixed2(x: number): string {
  return x.toFixed(2);
}

/** "+0.04", "-0.10", "±0.00". */
export function formatDelta(delta: number): string {
  const r = Number(delta.toFixed(2));
  if (r === 0) return '±0.00';
  return r > 0 ? `+${r.toFixed(2)}` : r.toFixed(2);
}

/** "p=0.12", "p<0.001". */
export function formatP(p: number): string {
  if (p < 0.001) return 'p<0.001';
  return `p=${p < 0.01 ? p.toFixed(3) : p.toFixed(2)}`;
}

/**
 * "0.71 ± 0.03", or "0.90 (0.60–1.00)" when the interval is not centred on the
 * mean (rewards lie in 0..1, so near a bound it is cut or Wilson's, and a ±
 * would claim values past the bound); just "0.71" without an interval.
 */
export function rewardWithInterval(mean: number, ci: [number, number] | null): string {
  if (!ci) return fixed2(mean);
  const below = fixed2(mean - ci[0]);
  return below === fixed2(ci[1] - mean) ? `${fixed2(mean)} ± ${below}` : `${fixed2(mean)} (${fixed2(ci[0])}–${fixed2(ci[1])})`;
}

/** "0.71 ± 0.03 (95% CI)", "0.90 (0.60–1.00) (95% CI)", or just "0.71" without an interval, "n/a" without rewards. */
export function formatRewardWithCi(s: Pick<PromptVersionStats, 'meanReward' | 'ci'>): string {
  if (s.meanReward === null) return 'n/a';
  if (!s.ci) return fixed2(s.meanReward);
  return `${rewardWithInterval(s.meanReward, s.ci)} (95% CI)`;
}

function plural(n: number, one: string): string {
  return `${n} ${one}${n === 1 ? '' : 's'}`;
}

/** The first lens for a version that has rollouts. */
export function versionLensTitle(current: PromptVersionStats, comparison: VersionComparison | null, now: number): string {
  const parts = [plural(current.rollouts, 'rollout'), `reward ${formatRewardWithCi(current)}`];
  if (current.decisionAlignment !== null) parts.push(`alignment ${Math.round(current.decisionAlignment)}%`);
  if (comparison?.previous && comparison.delta !== null) {
    const test = comparison.pValue === null ? 'too few rewards to test' : `${formatP(comparison.pValue)}, ${comparison.significant ? 'significant' : 'not significant'}`;
    parts.push(`Δ ${formatDelta(comparison.delta)} vs previous (${test})`);
  }
  if (current.lastRun !== null) parts.push(`last run ${formatAgo(current.lastRun, now)}`);
  return parts.join(' · ');
}

/** The first lens for text that no rollout has run yet. */
export function newVersionLensTitle(best: PromptVersionStats | null): string {
  const base = 'new version: no rollouts yet';
  return best && best.meanReward !== null ? `${base} · best so far ${shortHash(best.version)} ${fixed2(best.meanReward)}` : base;
}

/** The marker lens: the best-scoring version, when the current text is another. */
export function bestVersionLensTitle(best: PromptVersionStats): string {
  return `best version ${shortHash(best.version)}: ${best.meanReward === null ? 'n/a' : fixed2(best.meanReward)} (${plural(best.rollouts, 'rollout')})`;
}

/** The hover: per-criterion breakdown (a Markdown table, every value escaped) and the sparkline. */
export function versionHoverMarkdown(current: PromptVersionStats | null, currentVersion: string, agent: string): string {
  const head = `**${escapeMarkdown(agent)}** prompt version \`${shortHash(currentVersion)}\``;
  if (!current || current.rollouts === 0) return `${head}\n\nNo rollouts have run this text yet.`;
  const lines = [`${head} — ${plural(current.rollouts, 'rollout')}, mean reward ${escapeMarkdown(formatRewardWithCi(current))}`, ''];
  const names = Object.keys(current.criteria);
  if (names.length) {
    lines.push('| Criterion | Mean score |', '| --- | ---: |');
    for (const name of names) {
      const v = current.criteria[name];
      lines.push(`| ${escapeMarkdown(name)} | ${v === null || v === undefined ? 'n/a' : fixed2(v)} |`);
    }
  } else {
    lines.push('No judge scores for this version.');
  }
  if (current.sparkline) lines.push('', `Final rewards, oldest to newest: \`${current.sparkline.replace(/`/g, '')}\``);
  return lines.join('\n');
}

/** What the lenses of a prompt file show, decided from the agent's version statistics and the current text's hash. */
export interface PromptAnnotation {
  /** The first lens's title. */
  title: string;
  /** The version whose latest rollout a click on the first lens opens; null when there is none. */
  openVersion: string | null;
  /** The marker lens, when the current text is not the best-scoring version. */
  best: { title: string; version: string } | null;
  hover: string;
}

export function promptAnnotation(
  agent: string,
  stats: readonly PromptVersionStats[],
  comparisons: readonly VersionComparison[],
  best: PromptVersionStats | null,
  currentVersion: string,
  now: number,
): PromptAnnotation {
  const current = stats.find((s) => s.version === currentVersion && s.rollouts > 0) ?? null;
  const hover = versionHoverMarkdown(current, currentVersion, agent);
  if (!current) {
    return { title: newVersionLensTitle(best), openVersion: best?.version ?? null, best: null, hover };
  }
  const comparison = comparisons.find((c) => c.version === currentVersion) ?? null;
  return {
    title: versionLensTitle(current, comparison, now),
    openVersion: current.version,
    best: best && best.version !== current.version ? { title: bestVersionLensTitle(best), version: best.version } : null,
    hover,
  };
}

/**
 * The reward statistics of one version as a Markdown page (opened from the
 * rollouts picker): the hover's breakdown with the comparison to the
 * previous version and when it was first seen and last ran.
 */
export function versionReportMarkdown(s: PromptVersionStats, comparison: VersionComparison | null, isBest: boolean, now: number): string {
  const lines = [versionHoverMarkdown(s, s.version, s.agent), ''];
  if (isBest) lines.push('- The best-scoring version of this agent');
  if (s.decisionAlignment !== null) lines.push(`- Decision alignment: ${Math.round(s.decisionAlignment)}%`);
  if (comparison?.previous && comparison.delta !== null) {
    const test = comparison.pValue === null ? 'too few rewards to test' : `${formatP(comparison.pValue)}, ${comparison.significant ? 'significant' : 'not significant'}`;
    lines.push(`- Against previous version \`${shortHash(comparison.previous)}\`: Δ ${formatDelta(comparison.delta)} (Welch's t-test, ${test})`);
  }
  lines.push(`- First seen: ${new Date(s.firstSeen).toISOString()} (${formatAgo(s.firstSeen, now)})`);
  if (s.lastRun !== null) lines.push(`- Last run: ${new Date(s.lastRun).toISOString()} (${formatAgo(s.lastRun, now)})`);
  lines.push(`- Version hash: \`${s.version}\``);
  return `${lines.join('\n')}\n`;
}
