import type { SqlValue } from 'sql.js';
import { placeholders, type CatalogDb } from './catalogDb';
import type { JournalBook } from './journalBook';
import { AGENT_STRING_ID } from './tableQuery';
import type { TraceIndex } from './traceIndex';
import type { PromptVersionRecord, RescoreRecord, RolloutRecord, RunRecord } from './types';

const ROLLOUT_COLUMN_LIST = [
  'id', 'run_id', 'task_id', 'split', 'sample', 'status', 'final_reward', 'criteria', 'judge_failed', 'decision',
  'expected_decision', 'turns', 'error', 'simulated', 'start_time', 'end_time', 'span_count', 'writer', 'duration', 'original_reward',
  'failure', 'reward_breakdown', 'truncated_answers', 'truncated_prompts', 'input_tokens', 'output_tokens', 'reward_definition',
];
const ROLLOUT_COLUMNS = ROLLOUT_COLUMN_LIST.join(', ');
const ROLLOUT_UPDATES = ROLLOUT_COLUMN_LIST.filter((c) => c !== 'id').map((c) => `${c} = excluded.${c}`).join(', ');

/** The error a rollout gets when its writer died before finishing it. */
export const INTERRUPTED = 'interrupted';

/**
 * Applies what the journals record (runs, rollout starts and ends, prompt
 * versions, re-scores, writers closing or dying) to the catalog's rows. Every
 * process reads the journals in its own order, so each event is applied so
 * that the order does not matter and applying one twice changes nothing.
 */
export class CatalogEvents {
  constructor(
    private readonly db: CatalogDb,
    private readonly journals: JournalBook,
    private readonly traces: TraceIndex,
  ) {}

  /** Last writer wins, by the time the record was written, so every process derives the same run whichever journal it reads first. */
  applyRun(run: RunRecord, at: number, writer: string | null): void {
    this.db.run(
      `INSERT INTO runs(id, start_time, end_time, status, params, simulated, planned, updated_at, writer)
       VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT(id) DO UPDATE SET start_time = excluded.start_time, end_time = excluded.end_time, status = excluded.status,
         params = excluded.params, simulated = excluded.simulated, planned = excluded.planned,
         updated_at = excluded.updated_at, writer = excluded.writer
       WHERE excluded.updated_at >= runs.updated_at`,
      [run.id, run.startTime, run.endTime, run.status, JSON.stringify(run.params ?? {}), run.simulated ? 1 : 0, run.planned, at, writer],
    );
    this.db.dirty = true;
  }

  applyRolloutStart(r: RolloutRecord, writer: string | null): void {
    this.db.transaction(() => {
      this.db.run(`INSERT OR IGNORE INTO rollouts(${ROLLOUT_COLUMNS}) VALUES(${placeholders(ROLLOUT_COLUMN_LIST.length)})`, rolloutValues(r, writer));
      if (this.db.rowsModified() > 0) {
        this.insertAgents(this.rid(r.id), r);
        this.applyLatestReward(r.id);
      }
      this.linkAttempts(r);
      this.resolveDuplicates(r.runId, r.taskId, r.sample);
    });
    this.db.dirty = true;
  }

  applyRolloutEnd(r: RolloutRecord, writer: string | null): void {
    this.db.transaction(() => {
      // An upsert, not a replace: the row keeps its rid, which its agent rows point at.
      this.db.run(`INSERT INTO rollouts(${ROLLOUT_COLUMNS}) VALUES(${placeholders(ROLLOUT_COLUMN_LIST.length)}) ON CONFLICT(id) DO UPDATE SET ${ROLLOUT_UPDATES}`, rolloutValues(r, writer));
      const rid = this.rid(r.id);
      this.db.run('DELETE FROM rollout_agents WHERE rid = ?', [rid]);
      this.insertAgents(rid, r);
      this.applyLatestReward(r.id);
      this.linkAttempts(r);
      this.resolveDuplicates(r.runId, r.taskId, r.sample);
      this.traces.flushPending(r.id);
    });
    this.db.dirty = true;
  }

  /** Stored once per agent and hash; the earliest sighting dates it, whatever order journals are read in. */
  applyPrompt(p: PromptVersionRecord): void {
    this.db.run(
      `INSERT INTO prompt_versions(hash, agent, text, first_seen) VALUES(?, ?, ?, ?)
       ON CONFLICT(agent, hash) DO UPDATE SET first_seen = excluded.first_seen
       WHERE excluded.first_seen < prompt_versions.first_seen`,
      [p.hash, p.agent, p.text, p.firstSeen],
    );
    this.db.dirty = true;
  }

  /**
   * Records a re-score and puts each rollout's latest reward in force. Order
   * independent: a re-score read before its rollout (journals and segments are
   * read in name order, not time order) waits in reward_revisions and is
   * applied when the rollout arrives; the latest re-score (by time, then id)
   * wins whichever was read first. Applying one twice changes nothing.
   */
  applyRescore(r: RescoreRecord): void {
    this.db.transaction(() => {
      const criteria = JSON.stringify(r.criteria);
      this.db.run('INSERT OR REPLACE INTO rescores(id, at, criteria, note, rollouts) VALUES(?, ?, ?, ?, ?)', [r.id, r.at, criteria, r.note ?? null, r.rewards.length]);
      for (const w of r.rewards) {
        this.db.run('INSERT OR REPLACE INTO reward_revisions(rollout_id, rescore_id, at, reward_before, reward_after) VALUES(?, ?, ?, ?, ?)', [
          w.rolloutId,
          r.id,
          r.at,
          w.before,
          w.after,
        ]);
        this.applyLatestReward(w.rolloutId);
      }
    });
    this.db.dirty = true;
  }

  closeWriter(writerId: string): void {
    const w = this.journals.writers.get(writerId);
    if (w) w.state = 'closed';
    this.interruptWriter(writerId);
  }

  markWriterDead(writerId: string): void {
    const w = this.journals.writers.get(writerId);
    if (w && w.state === 'open') w.state = 'dead';
    this.interruptWriter(writerId);
  }

  /** A writer that is gone leaves no running rollouts or runs: they failed, and resume must redo them. */
  private interruptWriter(writerId: string): void {
    this.db.transaction(() => {
      const keys = this.db.all(`SELECT DISTINCT run_id, task_id, sample FROM rollouts WHERE writer = ? AND status = 'running'`, [writerId]);
      this.db.run(`UPDATE rollouts SET status = 'failed', error = ?, failure = 'interrupted' WHERE writer = ? AND status = 'running'`, [INTERRUPTED, writerId]);
      this.db.run(`UPDATE runs SET status = 'interrupted' WHERE writer = ? AND status = 'running'`, [writerId]);
      for (const k of keys) this.resolveDuplicates(String(k['run_id']), String(k['task_id']), Number(k['sample']));
    });
    this.db.dirty = true;
  }

  /**
   * A resumed run's attempt marks the attempts it replaces, and a rollout read
   * after the attempt that replaced it is marked as it arrives: either order
   * gives the same rows, and applying one twice changes nothing.
   */
  private linkAttempts(r: RolloutRecord): void {
    for (const old of r.supersedes ?? []) {
      this.db.run('INSERT OR IGNORE INTO rollout_supersedes(old_id, new_id) VALUES(?, ?)', [old, r.id]);
      this.db.run('UPDATE rollouts SET superseded_by = ? WHERE id = ?', [r.id, old]);
    }
    const by = this.db.get('SELECT new_id FROM rollout_supersedes WHERE old_id = ?', [r.id]);
    if (by) this.db.run('UPDATE rollouts SET superseded_by = ? WHERE id = ?', [String(by['new_id']), r.id]);
  }

  /**
   * One current attempt per run, task and sample, also when two attempts of it
   * ran at once (two workers given the same slice, or a worker presumed dead
   * that was still running beside its restart): neither names the other, so
   * both would count. Of the attempts no resume replaced, the finished ones are
   * ranked — succeeded first, then failed, then interrupted or cancelled; the
   * earlier end, then the smaller id, breaks ties — and the first stands: the
   * others (and any still running beside a finished one) are marked superseded
   * by it. Worked out from the key's rows alone, so every process gets the same
   * answer whatever order it read the journals in, and an attempt that ends
   * later with a better outcome takes over.
   */
  private resolveDuplicates(runId: string, taskId: string, sample: number): void {
    const rows = this.db.all(
      `SELECT r.id, r.status, r.failure, r.end_time, r.superseded_by, s.new_id AS linked
       FROM rollouts r LEFT JOIN rollout_supersedes s ON s.old_id = r.id
       WHERE r.run_id = ? AND r.task_id = ? AND r.sample = ?`,
      [runId, taskId, sample],
    );
    if (rows.length < 2) return;
    const open = rows.filter((r) => r['linked'] === null);
    const rank = (r: (typeof rows)[number]): number => (r['status'] === 'succeeded' ? 0 : r['status'] === 'failed' && r['failure'] !== 'interrupted' ? 1 : 2);
    const finished = open
      .filter((r) => r['status'] !== 'running')
      .sort((a, b) => rank(a) - rank(b) || Number(a['end_time'] ?? Infinity) - Number(b['end_time'] ?? Infinity) || String(a['id']).localeCompare(String(b['id'])));
    const winner = finished[0];
    for (const r of open) {
      const by = winner && r !== winner ? String(winner['id']) : null;
      if ((r['superseded_by'] ?? null) !== by) this.db.run('UPDATE rollouts SET superseded_by = ? WHERE id = ?', [by, String(r['id'])]);
    }
  }

  private rid(id: string): number {
    return Number(this.db.get('SELECT rid FROM rollouts WHERE id = ?', [id])!['rid']);
  }

  /** The latest re-score's reward, if the rollout has one, replaces the reward it ran with. */
  private applyLatestReward(rolloutId: string): void {
    const latest = this.db.get('SELECT reward_after FROM reward_revisions WHERE rollout_id = ? ORDER BY at DESC, rescore_id DESC LIMIT 1', [rolloutId]);
    if (latest) this.db.run('UPDATE rollouts SET final_reward = ? WHERE id = ?', [Number(latest['reward_after']), rolloutId]);
  }

  /** The agent, prompt version, model and model version are stored once each, in agent_strings; the row holds their ids. */
  private insertAgents(rid: number, r: RolloutRecord): void {
    r.agents.forEach((a, ord) => {
      const strings = [a.agent, a.promptVersion, a.model, a.modelVersion];
      this.db.run(`INSERT OR IGNORE INTO agent_strings(value) SELECT column1 FROM (VALUES (?), (?), (?), (?)) WHERE column1 IS NOT NULL`, strings);
      this.db.run(
        `INSERT INTO rollout_agents(rid, ord, agent_id, prompt_version_id, model_id, model_version_id, visits, llm_calls, tool_calls, errors, input_tokens, output_tokens, latency_ms)
         VALUES(?, ?, ${AGENT_STRING_ID}, ${AGENT_STRING_ID}, ${AGENT_STRING_ID}, ${AGENT_STRING_ID}, ?, ?, ?, ?, ?, ?, ?)`,
        [rid, ord, ...strings, a.visits, a.llmCalls, a.toolCalls, a.errors, a.inputTokens, a.outputTokens, a.latencyMs],
      );
    });
  }
}

function rolloutValues(r: RolloutRecord, writer: string | null): SqlValue[] {
  return [
    r.id,
    r.runId,
    r.taskId,
    r.split,
    r.sample,
    r.status,
    r.finalReward,
    r.criteria ? JSON.stringify(r.criteria) : null,
    r.judgeFailed ? 1 : 0,
    r.decision,
    r.expectedDecision,
    r.turns,
    r.error,
    r.simulated ? 1 : 0,
    r.startTime,
    r.endTime,
    r.spanCount,
    writer,
    r.endTime === null ? null : r.endTime - r.startTime,
    r.finalReward,
    r.failure ?? null,
    r.rewardBreakdown ? JSON.stringify(r.rewardBreakdown) : null,
    r.truncatedAnswers ?? null,
    r.truncatedPrompts ?? null,
    r.agents.reduce((n, a) => n + a.inputTokens, 0),
    r.agents.reduce((n, a) => n + a.outputTokens, 0),
    r.rewardDefinition ?? null,
  ];
}
