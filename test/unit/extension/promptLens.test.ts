import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { PromptVersionStats, VersionComparison } from '../../../src/core/analysis/promptStats';
import {
  bestVersionLensTitle,
  formatAgo,
  formatDelta,
  formatP,
  formatRewardWithCi,
  newVersionLensTitle,
  promptAnnotation,
  versionHoverMarkdown,
  SPARKLINE_COLOURS,
  type SparklineTheme,
  versionLensTitle,
} from '../../../src/extension/view/promptLens';

const NOW = Date.UTC(2025, 0, 1, 12, 0, 0);

function stats(p: Partial<PromptVersionStats> = {}): PromptVersionStats {
  return {
    agent: 'Supervisor',
    version: 'abcdef123456',
    firstSeen: NOW - 3_600_000,
    rollouts: 12,
    meanReward: 0.714,
    ci: [0.684, 0.744],
    decisionAlignment: 78.2,
    criteria: { novelty: 0.5, rigor: 0.8 },
    lastRun: NOW - 5 * 60_000,
    sparkline: '▁▃▅▇',
    rewards: [0.7, 0.72],
    rewardBasis: 'current',
    rescored: 0,
    rewardDefinitions: [],
    ...p,
  };
}

const cmp = (p: Partial<VersionComparison> = {}): VersionComparison => ({ version: 'abcdef123456', previous: '111111111111', delta: 0.04, pValue: 0.12, significant: false, notComparable: null, ...p });

describe('promptLens', () => {
  it('titles a version with rollouts: count, reward with CI, alignment, delta with its test, last run', () => {
    assert.equal(
      versionLensTitle(stats(), cmp(), NOW),
      '12 rollouts · reward 0.71 ± 0.03 (95% CI) · alignment 78% · Δ +0.04 vs previous (p=0.12, not significant) · last run 5 min ago',
    );
  });

  it('leaves out what it cannot say and says "significant" below alpha', () => {
    assert.equal(versionLensTitle(stats({ rollouts: 1, ci: null, decisionAlignment: null, lastRun: null }), null, NOW), '1 rollout · reward 0.71');
    assert.equal(versionLensTitle(stats(), cmp({ previous: null, delta: null, pValue: null }), NOW).includes('Δ'), false);
    assert.match(versionLensTitle(stats(), cmp({ delta: -0.1, pValue: 0.0004, significant: true }), NOW), /Δ -0\.10 vs previous \(p<0\.001, significant\)/);
    assert.match(versionLensTitle(stats(), cmp({ pValue: null }), NOW), /Δ \+0\.04 vs previous \(too few rewards to test\)/);
    assert.match(versionLensTitle(stats({ meanReward: null, ci: null }), null, NOW), /reward n\/a/);
  });

  it('formats times, deltas and p-values', () => {
    assert.equal(formatAgo(NOW - 10_000, NOW), 'just now');
    assert.equal(formatAgo(NOW - 5 * 60_000, NOW), '5 min ago');
    assert.equal(formatAgo(NOW - 3 * 3_600_000, NOW), '3 h ago');
    assert.equal(formatAgo(NOW - 3 * 86_400_000, NOW), '3 days ago');
    assert.equal(formatAgo(NOW + 60_000, NOW), 'just now');
    assert.equal(formatDelta(0.001), '±0.00');
    assert.equal(formatDelta(0.04), '+0.04');
    assert.equal(formatP(0.005), 'p=0.005');
    assert.equal(formatRewardWithCi({ meanReward: 0.5, ci: [0.4, 0.6] }), '0.50 ± 0.10 (95% CI)');
    // Near a bound the interval is not centred on the mean: its ends, never a ± that reaches past 1.
    assert.equal(formatRewardWithCi({ meanReward: 1, ci: [0.57, 1] }), '1.00 (0.57–1.00) (95% CI)');
    assert.equal(formatRewardWithCi({ meanReward: 0.6, ci: null }), '0.60');
  });

  it('titles a new version and the best-version marker', () => {
    assert.equal(newVersionLensTitle(null), 'new version: no rollouts yet');
    assert.equal(newVersionLensTitle(stats({ version: 'fedcba987654', meanReward: 0.74 })), 'new version: no rollouts yet · best so far fedcba9 0.74');
    assert.equal(bestVersionLensTitle(stats({ version: 'fedcba987654', meanReward: 0.74, rollouts: 9 })), 'best version fedcba9: 0.74 (9 rollouts)');
  });

  it('decides the lenses from the versions and the current hash', () => {
    const old = stats({ version: '111111111111', meanReward: 0.8, rollouts: 5 });
    const cur = stats();
    const a = promptAnnotation('Supervisor', [old, cur], [cmp({ version: '111111111111', previous: null }), cmp()], old, cur.version, NOW);
    assert.match(a.title, /^12 rollouts · reward 0\.71/);
    assert.equal(a.openVersion, cur.version);
    assert.deepEqual(a.best, { title: 'best version 1111111: 0.80 (5 rollouts)', version: '111111111111' });

    const onBest = promptAnnotation('Supervisor', [old, cur], [], cur, cur.version, NOW);
    assert.equal(onBest.best, null, 'no marker when the current text is the best version');

    const fresh = promptAnnotation('Supervisor', [old, cur], [], old, '999999999999', NOW);
    assert.equal(fresh.title, 'new version: no rollouts yet · best so far 1111111 0.80');
    assert.equal(fresh.openVersion, '111111111111');
    assert.equal(fresh.best, null);
    assert.match(fresh.hover, /No rollouts have run this text yet/);

    const knownButEmpty = promptAnnotation('Supervisor', [stats({ rollouts: 0, meanReward: null, ci: null, rewards: [] })], [], null, cur.version, NOW);
    assert.equal(knownButEmpty.title, 'new version: no rollouts yet');
    assert.equal(knownButEmpty.openVersion, null);
  });

  it('hovers with an escaped per-criterion table and the sparkline', () => {
    const md = versionHoverMarkdown(stats({ criteria: { 'a|b': 0.25, '*bold*': null } }), 'abcdef123456', 'Super_visor');
    assert.match(md, /\*\*Super\\_visor\*\* prompt version `abcdef1`/);
    assert.match(md, /\| Criterion \| Mean score \|/);
    assert.match(md, /\| a\\\|b \| 0\.25 \|/);
    assert.match(md, /\| \\\*bold\\\* \| n\/a \|/);
    assert.match(md, /`▁▃▅▇`/);
    assert.match(versionHoverMarkdown(stats({ criteria: {} }), 'abcdef123456', 'S'), /No judge scores/);
  });

  it("draws the hover's sparkline in colours readable on the theme's hover background", () => {
    // VS Code's default hover backgrounds: Dark Modern #202020, Light Modern #f8f8f8; high contrast black and white.
    const backgrounds: Record<SparklineTheme, string> = { dark: '#202020', light: '#f8f8f8', highContrast: '#000000', highContrastLight: '#ffffff' };
    const s = stats();
    for (const theme of Object.keys(backgrounds) as SparklineTheme[]) {
      const md = versionHoverMarkdown(s, 'abcdef123456', 'S', theme);
      const m = /!\[final rewards ([\d. ]+)\]\(data:image\/svg\+xml;base64,([A-Za-z0-9+/=]+)\)/.exec(md);
      assert.ok(m, md);
      assert.equal(m[1], s.rewards.map((v) => v.toFixed(2)).join(' '), 'the values in the alt text');
      const svg = Buffer.from(m[2]!, 'base64').toString('utf8');
      const { line, dot } = SPARKLINE_COLOURS[theme];
      assert.ok(svg.includes(`stroke="${line}"`) && svg.includes(`fill="${dot}"`), svg);
      for (const colour of [line, dot]) assert.ok(contrast(colour, backgrounds[theme]) >= 3, `${theme}: ${colour} on ${backgrounds[theme]} (${contrast(colour, backgrounds[theme]).toFixed(2)}:1)`);
    }
    assert.notEqual(SPARKLINE_COLOURS.dark.line, SPARKLINE_COLOURS.light.line);
    // A dark line on a dark hover was the defect: the light theme's colours fail on the dark background.
    assert.ok(contrast(SPARKLINE_COLOURS.light.dot, backgrounds.dark) < 3);
  });
});

/** WCAG contrast ratio of two #rrggbb colours. */
function contrast(a: string, b: string): number {
  const lum = (hex: string): number => {
    const [r, g, bl] = [1, 3, 5].map((i) => {
      const c = parseInt(hex.slice(i, i + 2), 16) / 255;
      return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r! + 0.7152 * g! + 0.0722 * bl!;
  };
  const [hi, lo] = [lum(a), lum(b)].sort((x, y) => y - x);
  return (hi! + 0.05) / (lo! + 0.05);
}
