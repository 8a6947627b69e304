import type { PromptVersionStats, VersionComparison } from '../../core/analysis/promptStats';
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
  const parts = [plural(current.rollouts, 'rollout'), `reward ${formatRewardWithCi(current)}${current.rescored ? ' under the current weights' : ''}`];
  if (current.decisionAlignment !== null) parts.push(`alignment ${Math.round(current.decisionAlignment)}%`);
  if (comparison?.previous && comparison.notComparable) parts.push(`vs previous: ${comparison.notComparable}`);
  else if (comparison?.previous && comparison.delta !== null) {
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

/**
 * The colour theme the hover's sparkline is drawn for (VS Code's
 * ColorThemeKind): an image in a hover cannot use the theme's CSS variables,
 * so its colours are picked per kind, each readable on that kind's hover background.
 */
export type SparklineTheme = 'light' | 'dark' | 'highContrast' | 'highContrastLight';

export const SPARKLINE_COLOURS: Record<SparklineTheme, { line: string; dot: string; guide: string }> = {
  dark: { line: '#4daafc', dot: '#e8e8e8', guide: '#8b8b8b' },
  light: { line: '#005fb8', dot: '#1f1f1f', guide: '#767676' },
  highContrast: { line: '#ffffff', dot: '#ffffff', guide: '#c0c0c0' },
  highContrastLight: { line: '#000000', dot: '#000000', guide: '#404040' },
};

/** How many of the latest rewards the sparkline draws. */
const SPARK_POINTS = 20;

/**
 * The latest final rewards as a small SVG line on a 0–1 scale (a faint line
 * at 0.5), in the theme's colours, as a Markdown image with a data: URI and
 * the values in its alt text.
 */
export function sparklineImage(rewards: readonly number[], theme: SparklineTheme): string {
  const shown = rewards.filter((v) => Number.isFinite(v)).slice(-SPARK_POINTS);
  if (shown.length === 0) return '';
  const c = SPARKLINE_COLOURS[theme];
  const w = 160;
  const h = 32;
  const pad = 3;
  const x = (i: number): number => (shown.length === 1 ? w / 2 : pad + (i * (w - 2 * pad)) / (shown.length - 1));
  const y = (v: number): number => pad + (1 - Math.min(1, Math.max(0, v))) * (h - 2 * pad);
  const pts = shown.map((v, i) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(' ');
  const dots = shown.map((v, i) => `<circle cx="${x(i).toFixed(1)}" cy="${y(v).toFixed(1)}" r="1.8" fill="${c.dot}"/>`).join('');
  const svg =
    `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}" viewBox="0 0 ${w} ${h}">` +
    `<line x1="0" x2="${w}" y1="${y(0.5)}" y2="${y(0.5)}" stroke="${c.guide}" stroke-width="1" stroke-dasharray="2 3"/>` +
    `<polyline points="${pts}" fill="none" stroke="${c.line}" stroke-width="2" stroke-linejoin="round"/>${dots}</svg>`;
  const alt = `final rewards ${shown.map((v) => v.toFixed(2)).join(' ')}`;
  return `![${alt}](data:image/svg+xml;base64,${Buffer.from(svg).toString('base64')})`;
}

/**
 * The hover: per-criterion breakdown (a Markdown table, every value escaped)
 * and the sparkline — an image in the theme's colours when `theme` is given
 * (the editor's hover), else Unicode blocks (a Markdown page).
 */
export function versionHoverMarkdown(current: PromptVersionStats | null, currentVersion: string, agent: string, theme?: SparklineTheme): string {
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
  const image = theme ? sparklineImage(current.rewards, theme) : '';
  if (image) {
    const shown = current.rewards.filter((v) => Number.isFinite(v)).slice(-SPARK_POINTS);
    lines.push('', `Final rewards of the last ${shown.length}, oldest to newest (scale 0–1): ${image} ${fixed2(Math.min(...shown))}–${fixed2(Math.max(...shown))}`);
  } else if (current.sparkline) lines.push('', `Final rewards, oldest to newest: \`${current.sparkline.replace(/`/g, '')}\``);
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
  theme?: SparklineTheme,
): PromptAnnotation {
  const current = stats.find((s) => s.version === currentVersion && s.rollouts > 0) ?? null;
  const hover = versionHoverMarkdown(current, currentVersion, agent, theme);
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
  if (s.rescored) lines.push(`- ${plural(s.rescored, 'reward')} re-scored on the fly under the current weights (from the stored judge scores; nothing is written)`);
  if (comparison?.previous && comparison.notComparable) lines.push(`- Against previous version \`${shortHash(comparison.previous)}\`: ${comparison.notComparable}`);
  else if (comparison?.previous && comparison.delta !== null) {
    const test = comparison.pValue === null ? 'too few rewards to test' : `${formatP(comparison.pValue)}, ${comparison.significant ? 'significant' : 'not significant'}`;
    lines.push(`- Against previous version \`${shortHash(comparison.previous)}\`: Δ ${formatDelta(comparison.delta)} (Welch's t-test, ${test})`);
  }
  lines.push(`- First seen: ${new Date(s.firstSeen).toISOString()} (${formatAgo(s.firstSeen, now)})`);
  if (s.lastRun !== null) lines.push(`- Last run: ${new Date(s.lastRun).toISOString()} (${formatAgo(s.lastRun, now)})`);
  lines.push(`- Version hash: \`${s.version}\``);
  return `${lines.join('\n')}\n`;
}
