import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { PromptVersionStats } from '../../../src/core/analysis/promptStats';
import {
  changedLines,
  commandLink,
  compactStats,
  differsFromBestMarkdown,
  isChangedLine,
  promptDiffTitle,
  versionLinksMarkdown,
} from '../../../src/extension/view/promptDiff';

function stats(p: Partial<PromptVersionStats> = {}): PromptVersionStats {
  return {
    agent: 'Supervisor',
    version: 'abc1234def56',
    firstSeen: 0,
    rollouts: 12,
    meanReward: 0.714,
    ci: [0.664, 0.764],
    decisionAlignment: null,
    criteria: {},
    lastRun: null,
    sparkline: '',
    rewards: [],
    rewardBasis: 'current',
    rescored: 0,
    rewardDefinitions: [],
    ...p,
  };
}

/** The argument a `command:` link carries, decoded as VS Code does. */
function linkArgs(markdown: string, command: string): unknown[] {
  const m = new RegExp(`\\(command:${command.replace(/\./g, '\\.')}\\?([^)]*)\\)`).exec(markdown);
  assert.ok(m, `a link to ${command} in ${markdown}`);
  return JSON.parse(decodeURIComponent(m[1]!)) as unknown[];
}

describe('promptDiff.changedLines', () => {
  it('finds no change between equal texts, whatever their line endings or final newline', () => {
    assert.deepEqual(changedLines('a\nb\nc\n', 'a\nb\nc\n'), []);
    assert.deepEqual(changedLines('a\r\nb\r\nc', 'a\nb\nc\n'), []);
    assert.deepEqual(changedLines('\uFEFFa\nb', 'a\nb'), []);
  });

  it('marks inserted lines as added, in the current text\'s line numbers', () => {
    assert.deepEqual(changedLines('a\nb\nc\n', 'new\na\nb\nc\n'), [{ kind: 'added', startLine: 0, endLine: 0 }]);
    assert.deepEqual(changedLines('a\nb\nc\n', 'a\nb\nx\ny\nc\n'), [{ kind: 'added', startLine: 2, endLine: 3 }]);
    assert.deepEqual(changedLines('a\nb', 'a\nb\nc'), [{ kind: 'added', startLine: 2, endLine: 2 }]);
  });

  it('marks replaced lines as modified and removed lines as deleted at the line that follows them', () => {
    assert.deepEqual(changedLines('a\nb\nc\n', 'a\nB\nc\n'), [{ kind: 'modified', startLine: 1, endLine: 1 }]);
    assert.deepEqual(changedLines('a\nb\nc\nd\n', 'a\nd\n'), [{ kind: 'deleted', startLine: 1, endLine: 1 }]);
    // Lines removed at the end sit on the last line there is.
    assert.deepEqual(changedLines('a\nb\nc', 'a'), [{ kind: 'deleted', startLine: 0, endLine: 0 }]);
    assert.deepEqual(changedLines('a\nb\nc\nd\ne\n', 'A\nb\nd\ne\nf\n'), [
      { kind: 'modified', startLine: 0, endLine: 0 },
      { kind: 'deleted', startLine: 2, endLine: 2 },
      { kind: 'added', startLine: 4, endLine: 4 },
    ]);
  });

  it('answers whether a line is marked', () => {
    const c = changedLines('a\nb\nc\n', 'a\nx\ny\nc\n');
    assert.equal(isChangedLine(c, 0), false);
    assert.equal(isChangedLine(c, 1), true);
    assert.equal(isChangedLine(c, 2), true);
    assert.equal(isChangedLine(c, 3), false);
  });
});

describe('promptDiff titles and hovers', () => {
  it('states a version\'s reward compactly', () => {
    assert.equal(compactStats(stats()), '0.71 ± 0.05, n=12');
    assert.equal(compactStats(stats({ ci: null, rollouts: 1 })), '0.71, n=1');
    assert.equal(compactStats(stats({ meanReward: null, ci: null, rollouts: 2 })), 'n/a, n=2');
    assert.equal(compactStats(stats({ rollouts: 0 })), 'no rollouts');
    assert.equal(compactStats(null), 'no rollouts');
  });

  it('titles the diff editor with both sides\' statistics', () => {
    assert.equal(
      promptDiffTitle('Supervisor', 'abc1234def56', stats(), stats({ version: '999999999999', meanReward: 0.8, ci: [0.77, 0.83], rollouts: 9 })),
      'Supervisor abc1234 (0.71 ± 0.05, n=12) ↔ current (0.80 ± 0.03, n=9)',
    );
    assert.equal(promptDiffTitle('Supervisor', 'abc1234def56', stats(), null), 'Supervisor abc1234 (0.71 ± 0.05, n=12) ↔ current (no rollouts)');
  });

  it('says where the text differs from the best version, with a link that compares with it', () => {
    const ref = { folder: '/w', agent: 'Supervisor', version: 'abc1234def56' };
    const md = differsFromBestMarkdown(stats({ meanReward: 0.81, ci: [0.77, 0.85] }), ref);
    assert.match(md, /^Differs from best version `abc1234` \(mean 0\\\.81 ± 0\\\.04, n=12\)/);
    assert.deepEqual(linkArgs(md, 'rolloutLab.comparePromptWithVersion'), [ref]);
  });

  it('links the statistics hover to the version\'s rollouts and the history, encoding odd names safely', () => {
    const ref = { folder: '/w (copy)/x', agent: 'Super)visor', version: 'abc1234def56' };
    const md = versionLinksMarkdown(ref, { folder: ref.folder, agent: ref.agent });
    assert.deepEqual(linkArgs(md, 'rolloutLab.showPromptVersionRollouts'), [ref]);
    assert.deepEqual(linkArgs(md, 'rolloutLab.comparePromptWithVersion'), [{ folder: ref.folder, agent: ref.agent }]);
    assert.equal(versionLinksMarkdown(null, { folder: '/w', agent: 'A' }).includes('showPromptVersionRollouts'), false);
    assert.equal(commandLink('x.y', { a: ')' }).includes(')'), false);
  });
});
