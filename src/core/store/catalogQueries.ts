import { RESEARCH_LAB_DECISIONS, decisionAlignment, type DecisionLabels } from '../data/decisionAlignment';
import type { SqlValue } from 'sql.js';
import { placeholders, type CatalogDb, type Row } from './catalogDb';
import { INTERRUPTED } from './catalogEvents';
import { isFailureKind } from './failureKinds';
import { AGENT_STRING_ID, agentRowsSql, rolloutCost, tableQuerySql, type ModelPrices, type RolloutTablePage, type RolloutTableQuery, type RolloutTableRow } from './tableQuery';
import type { TraceIndex } from './traceIndex';
import type {
  AgentAggregate,
  PromptVersionRecord,
  RescoreSummary,
  RewardRevision,
  RolloutAgentRecord,
  RolloutAttempt,
  RolloutQuery,
  RolloutRecord,
  RolloutStatus,
  RunRecord,
} from './types';

/** What the rollouts table's filters can choose from. */
export interface TableFacets {
  agents: string[];
  failures: string[];
  promptVersions: Array<{ agent: string; hash: string; firstSeen: number }>;
  modelVersions: Array<{ model: string; version: string }>;
}

/**
 * The catalog read: runs, rollouts with their agents, the rollouts table,
 * per-agent aggregates, prompt versions and re-scores, as the store's records.
 * Span counts include the spans still pending in memory (see TraceIndex).
 */
export class CatalogQueries {
  constructor(
    private readonly db: CatalogDb,
    private readonly traces: TraceIndex,
  ) {}

  rolloutStatus(id: string): RolloutStatus | null {
    const r = this.db.get('SELECT status FROM rollouts WHERE id = ?', [id]);
    return r ? (String(r['status']) as RolloutStatus) : null;
  }

  hasRescore(id: string): boolean {
    return this.db.get('SELECT 1 AS x FROM rescores WHERE id = ?', [id]) !== null;
  }

  /** Newest first. */
  listRescores(): RescoreSummary[] {
    return this.db.all('SELECT id, at, criteria, note, rollouts FROM rescores ORDER BY at DESC, id DESC').map((r) => {
      const out: RescoreSummary = {
        id: String(r['id']),
        at: Number(r['at']),
        criteria: JSON.parse(String(r['criteria'])) as RescoreSummary['criteria'],
        rollouts: Number(r['rollouts']),
      };
      if (r['note'] !== null) out.note = String(r['note']);
      return out;
    });
  }

  /** The reward the rollout ran with, then each re-score in order; empty for a rollout the catalog does not know. */
  rewardHistory(rolloutId: string): RewardRevision[] {
    const row = this.db.get('SELECT original_reward, start_time, end_time FROM rollouts WHERE id = ?', [rolloutId]);
    if (!row) return [];
    const original: RewardRevision = {
      rolloutId,
      rescoreId: null,
      at: Number(row['end_time'] ?? row['start_time']),
      reward: row['original_reward'] === null ? null : Number(row['original_reward']),
      criteria: null,
    };
    const revisions = this.db.all(
      `SELECT v.rescore_id, v.at, v.reward_after, s.criteria FROM reward_revisions v LEFT JOIN rescores s ON s.id = v.rescore_id
       WHERE v.rollout_id = ? ORDER BY v.at, v.rescore_id`,
      [rolloutId],
    ).map(
      (v): RewardRevision => ({
        rolloutId,
        rescoreId: String(v['rescore_id']),
        at: Number(v['at']),
        reward: Number(v['reward_after']),
        criteria: v['criteria'] === null ? null : (JSON.parse(String(v['criteria'])) as Record<string, { weight: number }>),
      }),
    );
    return [original, ...revisions];
  }

  getRun(id: string): RunRecord | null {
    const r = this.db.get('SELECT * FROM runs WHERE id = ?', [id]);
    return r ? toRun(r) : null;
  }

  listRuns(): RunRecord[] {
    return this.db.all('SELECT * FROM runs ORDER BY start_time DESC, id').map(toRun);
  }

  getRollout(id: string): RolloutRecord | null {
    const r = this.db.get(`SELECT r.*, t.spans AS observed FROM rollouts r LEFT JOIN trace_locs t ON t.trace_id = r.id WHERE r.id = ?`, [id]);
    return r ? this.withAgents([r])[0]! : null;
  }

  /** Ids of rollouts that start with `prefix` (lowercase hex), at most `limit`: a range over the primary key. */
  rolloutIdsStartingWith(prefix: string, limit: number): string[] {
    return this.db.all(`SELECT id FROM rollouts WHERE id >= ? AND id < ? ORDER BY id LIMIT ?`, [prefix, `${prefix}g`, limit]).map((r) => String(r.id));
  }

  listRollouts(q: RolloutQuery = {}): { rollouts: RolloutRecord[]; total: number } {
    const where: string[] = [];
    const params: SqlValue[] = [];
    if (q.runId !== undefined) {
      where.push('r.run_id = ?');
      params.push(q.runId);
    }
    if (q.status !== undefined) {
      const statuses: RolloutStatus[] = Array.isArray(q.status) ? q.status : [q.status];
      where.push(`r.status IN (${placeholders(statuses.length)})`);
      params.push(...statuses);
    }
    if (q.split !== undefined) {
      where.push('r.split = ?');
      params.push(q.split);
    }
    if (q.minReward !== undefined) {
      where.push('r.final_reward >= ?');
      params.push(q.minReward);
    }
    if (q.maxReward !== undefined) {
      where.push('r.final_reward <= ?');
      params.push(q.maxReward);
    }
    if (q.taskId !== undefined) {
      where.push('r.task_id = ?');
      params.push(q.taskId);
    }
    if (q.superseded !== undefined) where.push(q.superseded ? 'r.superseded_by IS NOT NULL' : 'r.superseded_by IS NULL');
    if (q.promptVersion !== undefined || q.agent !== undefined) {
      const cond = ['a.rid = r.rid'];
      if (q.agent !== undefined) {
        cond.push(`a.agent_id = ${AGENT_STRING_ID}`);
        params.push(q.agent);
      }
      if (q.promptVersion !== undefined) {
        cond.push(`a.prompt_version_id = ${AGENT_STRING_ID}`);
        params.push(q.promptVersion);
      }
      where.push(`EXISTS (SELECT 1 FROM rollout_agents a WHERE ${cond.join(' AND ')})`);
    }
    const whereSql = where.length ? `WHERE ${where.join(' AND ')}` : '';
    const total = Number(this.db.get(`SELECT COUNT(*) AS n FROM rollouts r ${whereSql}`, params)?.['n'] ?? 0);
    const column = q.sort === 'finalReward' ? 'r.final_reward' : q.sort === 'duration' ? 'r.duration' : 'r.start_time';
    const dir = q.order === 'asc' ? 'ASC' : 'DESC';
    // Rollouts without a value (still running, no reward) go last either way; the id keeps pages stable.
    const orderSql = `ORDER BY ${column} IS NULL, ${column} ${dir}, r.id ${dir}`;
    const limit = q.limit === undefined ? -1 : Math.max(0, Math.min(q.limit, Number.MAX_SAFE_INTEGER));
    const offset = Math.max(0, q.offset ?? 0);
    const rows = this.db.all(
      `SELECT r.*, t.spans AS observed FROM rollouts r LEFT JOIN trace_locs t ON t.trace_id = r.id ${whereSql} ${orderSql} LIMIT ? OFFSET ?`,
      [...params, limit, offset],
    );
    return { rollouts: this.withAgents(rows), total };
  }

  /** One page of the rollouts table: filters, full-text search and sort in SQL (see tableQuerySql), then the page's agents. */
  queryTable(q: RolloutTableQuery, prices: ModelPrices | null = null, labels: DecisionLabels = RESEARCH_LAB_DECISIONS): RolloutTablePage {
    if (q.text) this.traces.searchable();
    const sql = tableQuerySql(q, prices, labels);
    const total = Number(this.db.get(sql.countSql, sql.countParams)?.['n'] ?? 0);
    const rows = this.db.all(sql.pageSql, sql.pageParams);
    const agents = this.agentsByRid(rows.map((r) => Number(r['rid'])));
    const spans = new Map<string, number>();
    for (let i = 0; i < rows.length; i += 500) {
      const ids = rows.slice(i, i + 500).map((r) => String(r['id']));
      for (const t of this.db.all(`SELECT trace_id, spans FROM trace_locs WHERE trace_id IN (${placeholders(ids.length)})`, ids)) spans.set(String(t['trace_id']), Number(t['spans']));
    }
    const out = rows.map((r): RolloutTableRow => {
      const id = String(r['id']);
      const a = agents.get(Number(r['rid'])) ?? [];
      const observed = this.traces.observedSpans(id, spans.get(id));
      const decision = r['decision'] === null ? null : String(r['decision']);
      const expectedDecision = r['expected_decision'] === null ? null : String(r['expected_decision']);
      return {
        id,
        runId: String(r['run_id']),
        taskId: String(r['task_id']),
        split: r['split'] === null ? null : (String(r['split']) as RolloutTableRow['split']),
        sample: Number(r['sample']),
        status: String(r['status']) as RolloutStatus,
        failure: r['failure'] === null ? null : String(r['failure']),
        reward: r['final_reward'] === null ? null : Number(r['final_reward']),
        criteria: r['criteria'] === null ? null : (JSON.parse(String(r['criteria'])) as Record<string, number>),
        decision,
        expectedDecision,
        alignment: decisionAlignment(decision, expectedDecision, labels),
        supersededBy: r['superseded_by'] === null ? null : String(r['superseded_by']),
        turns: r['turns'] === null ? null : Number(r['turns']),
        inputTokens: r['input_tokens'] === null ? null : Number(r['input_tokens']),
        outputTokens: r['output_tokens'] === null ? null : Number(r['output_tokens']),
        latencyMs: r['duration'] === null ? null : Number(r['duration']),
        cost: rolloutCost(a, prices),
        simulated: Number(r['simulated']) === 1,
        startTime: Number(r['start_time']),
        spans: observed > 0 ? observed : Number(r['span_count']),
        agents: a.map(({ agent, promptVersion, model, modelVersion }) => ({ agent, promptVersion, model, modelVersion })),
      };
    });
    return { rows: out, total, offset: Math.max(0, Math.floor(q.offset ?? 0)) };
  }

  /** The ids of every rollout a table query matches, in its order (no page). */
  queryTableIds(q: RolloutTableQuery, prices: ModelPrices | null = null, labels: DecisionLabels = RESEARCH_LAB_DECISIONS): string[] {
    if (q.text) this.traces.searchable();
    const sql = tableQuerySql(q, prices, labels);
    return this.db.all(sql.idsSql, sql.idsParams).map((r) => String(r['id']));
  }

  /** What the table's filters can choose from: agents, failure categories, and the prompt and model versions each agent ran. */
  tableFacets(): TableFacets {
    return {
      // Strings some per-agent row still names (a rollout's rows are replaced when it ends; its old strings stay in agent_strings).
      agents: this.db.all('SELECT value AS agent FROM agent_strings WHERE id IN (SELECT agent_id FROM rollout_agents) ORDER BY value').map((r) => String(r['agent'])),
      failures: this.db.all('SELECT DISTINCT failure FROM rollouts WHERE failure IS NOT NULL ORDER BY failure').map((r) => String(r['failure'])),
      promptVersions: this.db.all('SELECT agent, hash, first_seen FROM prompt_versions ORDER BY agent, first_seen').map((r) => ({
        agent: String(r['agent']),
        hash: String(r['hash']),
        firstSeen: Number(r['first_seen']),
      })),
      modelVersions: this.db
        .all(
          `SELECT m.value AS model, v.value AS model_version
           FROM (SELECT DISTINCT model_id, model_version_id FROM rollout_agents WHERE model_id IS NOT NULL AND model_version_id IS NOT NULL) x
           JOIN agent_strings m ON m.id = x.model_id JOIN agent_strings v ON v.id = x.model_version_id
           ORDER BY m.value, v.value`,
        )
        .map((r) => ({
          model: String(r['model']),
          version: String(r['model_version']),
        })),
    };
  }

  /** Each task and sample's current attempts in a run (those no resume replaced), for resume to decide what to redo. */
  currentAttempts(runId: string): RolloutAttempt[] {
    return this.db
      .all('SELECT id, task_id, sample, status, failure, error FROM rollouts WHERE run_id = ? AND superseded_by IS NULL ORDER BY start_time, rid', [runId])
      .map((r) => ({
        id: String(r['id']),
        taskId: String(r['task_id']),
        sample: Number(r['sample']),
        status: String(r['status']) as RolloutStatus,
        failure: isFailureKind(r['failure']) ? r['failure'] : null,
        error: r['error'] === null ? null : String(r['error']),
      }));
  }

  /** Keys of rollouts that ran to an end; interrupted ones are left out so resume redoes them. */
  finishedKeys(runId: string): Set<string> {
    const rows = this.db.all(
      `SELECT task_id, sample FROM rollouts WHERE run_id = ? AND (status = 'succeeded' OR (status = 'failed' AND (error IS NULL OR error <> ?)))`,
      [runId, INTERRUPTED],
    );
    return new Set(rows.map((r) => `${String(r['task_id'])}#${Number(r['sample'])}`));
  }

  aggregateByAgent(q: { runId?: string; agent?: string } = {}): AgentAggregate[] {
    const where = [`r.status <> 'running'`];
    const params: SqlValue[] = [];
    if (q.runId !== undefined) {
      where.push('r.run_id = ?');
      params.push(q.runId);
    }
    if (q.agent !== undefined) {
      where.push(`a.agent_id = ${AGENT_STRING_ID}`);
      params.push(q.agent);
    }
    // Grouped by the strings' ids (one id per string), then named and ordered by the strings.
    const rows = this.db.all(
      `SELECT g.value AS agent, p.value AS prompt_version, x.*
       FROM (SELECT a.agent_id, a.prompt_version_id, COUNT(DISTINCT a.rid) AS rollouts, AVG(r.final_reward) AS mean_reward,
                    SUM(a.visits) AS visits, SUM(a.llm_calls) AS llm_calls, SUM(a.tool_calls) AS tool_calls, SUM(a.errors) AS errors,
                    AVG(a.latency_ms) AS mean_latency, SUM(a.input_tokens) AS input_tokens, SUM(a.output_tokens) AS output_tokens,
                    MIN(r.start_time) AS first_start
             FROM rollout_agents a JOIN rollouts r ON r.rid = a.rid
             WHERE ${where.join(' AND ')}
             GROUP BY a.agent_id, a.prompt_version_id) x
       LEFT JOIN agent_strings g ON g.id = x.agent_id LEFT JOIN agent_strings p ON p.id = x.prompt_version_id
       ORDER BY g.value, x.first_start, p.value`,
      params,
    );
    return rows.map((r) => ({
      agent: String(r['agent']),
      promptVersion: r['prompt_version'] === null ? null : String(r['prompt_version']),
      rollouts: Number(r['rollouts']),
      meanReward: r['mean_reward'] === null ? null : Number(r['mean_reward']),
      visits: Number(r['visits']),
      llmCalls: Number(r['llm_calls']),
      toolCalls: Number(r['tool_calls']),
      errors: Number(r['errors']),
      meanLatencyMs: Number(r['mean_latency'] ?? 0),
      inputTokens: Number(r['input_tokens']),
      outputTokens: Number(r['output_tokens']),
    }));
  }

  /** A version's text (the same for every agent that ran it); with an agent, only that agent's. */
  getPromptVersion(hash: string, agent?: string): PromptVersionRecord | null {
    const r =
      agent === undefined
        ? this.db.get('SELECT * FROM prompt_versions WHERE hash = ? ORDER BY first_seen, agent LIMIT 1', [hash])
        : this.db.get('SELECT * FROM prompt_versions WHERE agent = ? AND hash = ?', [agent, hash]);
    return r ? toPrompt(r) : null;
  }

  listPromptVersions(agent?: string): PromptVersionRecord[] {
    return agent === undefined
      ? this.db.all('SELECT * FROM prompt_versions ORDER BY first_seen, hash').map(toPrompt)
      : this.db.all('SELECT * FROM prompt_versions WHERE agent = ? ORDER BY first_seen, hash', [agent]).map(toPrompt);
  }

  /** Runs last written by one of these writers (compaction carries their final state along). */
  runsByWriters(writerIds: readonly string[]): Array<{ run: RunRecord; at: number }> {
    if (!writerIds.length) return [];
    return this.db.all(`SELECT * FROM runs WHERE writer IN (${placeholders(writerIds.length)})`, writerIds).map((r) => ({ run: toRun(r), at: Number(r['updated_at']) }));
  }

  /** Rollouts written by one of these writers, with the reward they ran with (re-scores travel in their own frames). */
  rolloutsByWriters(writerIds: readonly string[]): RolloutRecord[] {
    if (!writerIds.length) return [];
    const rows = this.db.all(
      `SELECT r.*, t.spans AS observed FROM rollouts r LEFT JOIN trace_locs t ON t.trace_id = r.id WHERE r.writer IN (${placeholders(writerIds.length)})`,
      writerIds,
    );
    return this.withAgents(rows.map((r) => ({ ...r, final_reward: r['original_reward'] ?? null })));
  }

  counts(): { rollouts: number; spans: number } {
    const rollouts = Number(this.db.get('SELECT COUNT(*) AS n FROM rollouts')?.['n'] ?? 0);
    const spans = Number(this.db.get('SELECT COALESCE(SUM(spans), 0) AS n FROM trace_locs')?.['n'] ?? 0) + this.traces.pendingSpans();
    return { rollouts, spans };
  }

  private withAgents(rows: Row[]): RolloutRecord[] {
    const agents = this.agentsByRid(rows.map((r) => Number(r['rid'])));
    return rows.map((r) => {
      const stored = r['observed'] === null || r['observed'] === undefined ? 0 : Number(r['observed']);
      return toRollout(r, agents.get(Number(r['rid'])) ?? [], this.traces.observedSpans(String(r['id']), stored));
    });
  }

  /** Each rollout's agents, in their order, by rid (500 rollouts a query). */
  private agentsByRid(rids: readonly number[]): Map<number, RolloutAgentRecord[]> {
    const agents = new Map<number, RolloutAgentRecord[]>();
    for (let i = 0; i < rids.length; i += 500) {
      const chunk = rids.slice(i, i + 500);
      for (const a of this.db.all(agentRowsSql(chunk.length), chunk)) {
        const rid = Number(a['rid']);
        let list = agents.get(rid);
        if (!list) agents.set(rid, (list = []));
        list.push(toAgent(a));
      }
    }
    return agents;
  }
}

function toRollout(r: Row, agents: RolloutAgentRecord[], observedSpans: number): RolloutRecord {
  return {
    id: String(r['id']),
    runId: String(r['run_id']),
    taskId: String(r['task_id']),
    split: r['split'] === null ? null : (String(r['split']) as RolloutRecord['split']),
    sample: Number(r['sample']),
    status: String(r['status']) as RolloutStatus,
    failure: isFailureKind(r['failure']) ? r['failure'] : null,
    finalReward: r['final_reward'] === null ? null : Number(r['final_reward']),
    criteria: r['criteria'] === null ? null : (JSON.parse(String(r['criteria'])) as Record<string, number>),
    rewardBreakdown: r['reward_breakdown'] === null ? null : (JSON.parse(String(r['reward_breakdown'])) as Record<string, number>),
    judgeFailed: Number(r['judge_failed']) === 1,
    decision: r['decision'] === null ? null : String(r['decision']),
    expectedDecision: r['expected_decision'] === null ? null : String(r['expected_decision']),
    turns: r['turns'] === null ? null : Number(r['turns']),
    error: r['error'] === null ? null : String(r['error']),
    simulated: Number(r['simulated']) === 1,
    startTime: Number(r['start_time']),
    endTime: r['end_time'] === null ? null : Number(r['end_time']),
    // What the store holds is the truth; the writer's own count stands in only when no span was stored.
    spanCount: observedSpans > 0 ? observedSpans : Number(r['span_count']),
    agents,
    truncatedAnswers: r['truncated_answers'] === null ? null : Number(r['truncated_answers']),
    truncatedPrompts: r['truncated_prompts'] === null ? null : Number(r['truncated_prompts']),
    ...(r['reward_definition'] === null || r['reward_definition'] === undefined ? {} : { rewardDefinition: String(r['reward_definition']) }),
    // Only on an attempt a resume replaced, so a current one reads back as it was written.
    ...(r['superseded_by'] === null || r['superseded_by'] === undefined ? {} : { supersededBy: String(r['superseded_by']) }),
  };
}

function toAgent(a: Row): RolloutAgentRecord {
  return {
    agent: String(a['agent']),
    promptVersion: a['prompt_version'] === null ? null : String(a['prompt_version']),
    model: a['model'] === null ? null : String(a['model']),
    modelVersion: a['model_version'] === null ? null : String(a['model_version']),
    visits: Number(a['visits']),
    llmCalls: Number(a['llm_calls']),
    toolCalls: Number(a['tool_calls']),
    errors: Number(a['errors']),
    inputTokens: Number(a['input_tokens']),
    outputTokens: Number(a['output_tokens']),
    latencyMs: Number(a['latency_ms']),
  };
}

function toRun(r: Row): RunRecord {
  return {
    id: String(r['id']),
    startTime: Number(r['start_time']),
    endTime: r['end_time'] === null ? null : Number(r['end_time']),
    status: String(r['status']) as RunRecord['status'],
    params: JSON.parse(String(r['params'])) as Record<string, unknown>,
    simulated: Number(r['simulated']) === 1,
    planned: Number(r['planned']),
  };
}

function toPrompt(r: Row): PromptVersionRecord {
  return { hash: String(r['hash']), agent: String(r['agent']), text: String(r['text']), firstSeen: Number(r['first_seen']) };
}
