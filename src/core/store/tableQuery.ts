import { RESEARCH_LAB_DECISIONS, decisionAlignmentSql, type Alignment, type DecisionLabels } from '../data/decisionAlignment';
import { ftsMatchExpression } from './rolloutText';
import type { RolloutRecord, RolloutStatus, Split } from './types';

/** Columns the rollouts table sorts by; `criterion:<name>` sorts by one judge criterion. */
export const TABLE_SORT_KEYS = [
  'startTime',
  'run',
  'task',
  'split',
  'status',
  'failure',
  'reward',
  'decision',
  'turns',
  'inputTokens',
  'outputTokens',
  'latency',
  'cost',
  'simulated',
] as const;
export type TableSortKey = (typeof TABLE_SORT_KEYS)[number] | `criterion:${string}`;

export type DecisionFilter = 'match' | 'mismatch' | 'none';

/** A range of a number; either end may be left open. */
export interface NumberRange {
  min?: number;
  max?: number;
}

/**
 * One question to the rollouts table: filters (all must hold; a list matches
 * any of its values), full-text search over the spans' text, sort and a page.
 */
export interface RolloutTableQuery {
  runIds?: string[];
  splits?: Split[];
  statuses?: RolloutStatus[];
  /** Failure categories (FailureKind). */
  failures?: string[];
  reward?: NumberRange;
  /** Judge criterion name → range of its score. */
  criteria?: Record<string, NumberRange>;
  /** Decision alignment (decisionAlignment, under the graph's mapping): aligned, misaligned, or neither (no decision or label, a "maybe" task). */
  decision?: DecisionFilter;
  /** Rollouts in which this agent ran (with the versions below, when given). */
  agent?: string;
  promptVersion?: string;
  modelVersion?: string;
  simulated?: boolean;
  /** Words to find in span names, messages, tool calls and the final output (the last word also as a prefix). */
  text?: string;
  /** Default 'startTime'. Rows without a value for the key come last either way. */
  sort?: TableSortKey;
  /** Default 'desc'. */
  order?: 'asc' | 'desc';
  offset?: number;
  /** Default 200. */
  limit?: number;
}

/** Price of a model per 1,000,000 tokens (lab.json models.<name>.price). */
export interface ModelPrice {
  input: number;
  output: number;
}
export type ModelPrices = Record<string, ModelPrice>;

/** What the table shows of one agent in a rollout: the versions it ran. */
export interface TableAgentVersions {
  agent: string;
  promptVersion: string | null;
  model: string | null;
  modelVersion: string | null;
}

/** A rollout's own facts as the table shows them, with its tokens, latency, cost and the versions each agent ran. */
export interface RolloutTableRow extends Pick<RolloutRecord, 'id' | 'runId' | 'taskId' | 'split' | 'sample' | 'status' | 'criteria' | 'decision' | 'expectedDecision' | 'turns' | 'simulated' | 'startTime'> {
  failure: string | null;
  reward: number | null;
  inputTokens: number | null;
  outputTokens: number | null;
  /** Wall-clock time of the rollout, ms; null while it runs. */
  latencyMs: number | null;
  /** In the prices' currency; null when no price is configured. */
  cost: number | null;
  spans: number;
  agents: TableAgentVersions[];
  /** The decision against the expected answer, under the graph's decision mapping (decisionAlignment). */
  alignment: Alignment;
  /** The later attempt a resume ran in its place; null for a current attempt. */
  supersededBy: string | null;
}

export interface RolloutTablePage {
  rows: RolloutTableRow[];
  /** Matches before paging. */
  total: number;
  offset: number;
}

/** The SQL of a table query: the count, the page (the rollouts' own columns, in order) and their parameters. */
export interface TableQuerySql {
  countSql: string;
  countParams: Array<string | number>;
  pageSql: string;
  pageParams: Array<string | number>;
  /** Every match's id, in the page order (selecting all). */
  idsSql: string;
  idsParams: Array<string | number>;
}

export const DEFAULT_TABLE_PAGE = 200;
export const MAX_TABLE_PAGE = 5000;

const SORT_COLUMNS: Record<Exclude<TableSortKey, `criterion:${string}`>, string> = {
  startTime: 'r.start_time',
  run: 'r.run_id',
  task: 'r.task_id',
  split: 'r.split',
  status: 'r.status',
  failure: 'r.failure',
  reward: 'r.final_reward',
  decision: 'r.decision',
  turns: 'r.turns',
  inputTokens: 'r.input_tokens',
  outputTokens: 'r.output_tokens',
  latency: 'r.duration',
  cost: '', // from the prices: see costSql
  simulated: 'r.simulated',
};

/**
 * The id of a string in agent_strings, as a scalar subquery bound to the
 * string (NULL for NULL, or for a string never stored): per-agent rows hold
 * ids of their agent, prompt version, model and model version (schema v10).
 */
export const AGENT_STRING_ID = '(SELECT id FROM agent_strings WHERE value = ?)';

/**
 * The agents of some rollouts (`count` rids bound), each rollout's in their
 * order, with their strings looked up: the columns of a per-agent row as
 * they read before the strings moved out (agent, prompt_version, model,
 * model_version, visits, …).
 */
export function agentRowsSql(count: number): string {
  return (
    'SELECT a.rid, a.ord, g.value AS agent, p.value AS prompt_version, m.value AS model, v.value AS model_version, a.visits, a.llm_calls, ' +
    'a.tool_calls, a.errors, a.input_tokens, a.output_tokens, a.latency_ms FROM rollout_agents a ' +
    'LEFT JOIN agent_strings g ON g.id = a.agent_id LEFT JOIN agent_strings p ON p.id = a.prompt_version_id ' +
    'LEFT JOIN agent_strings m ON m.id = a.model_id LEFT JOIN agent_strings v ON v.id = a.model_version_id ' +
    `WHERE a.rid IN (${new Array<string>(count).fill('?').join(', ')}) ORDER BY a.rid, a.ord`
  );
}

/** The page's columns, as the catalog reads them into rows. */
const PAGE_COLUMNS =
  'r.rid, r.id, r.run_id, r.task_id, r.split, r.sample, r.status, r.failure, r.final_reward, r.criteria, r.decision, r.expected_decision, ' +
  'r.turns, r.input_tokens, r.output_tokens, r.duration, r.simulated, r.start_time, r.span_count, r.superseded_by';

/**
 * The rollouts table's query as SQL over the catalog (one builder, so the
 * benchmark runs exactly what the store runs). Values travel as parameters;
 * prices, which come from the checked lab.json, are written in as numbers.
 */
export function tableQuerySql(q: RolloutTableQuery, prices: ModelPrices | null = null, labels: DecisionLabels = RESEARCH_LAB_DECISIONS): TableQuerySql {
  const where: string[] = [];
  const params: Array<string | number> = [];
  const inList = (column: string, values: readonly string[] | undefined): void => {
    if (!values?.length) return;
    where.push(`${column} IN (${values.map(() => '?').join(', ')})`);
    params.push(...values);
  };
  const range = (expr: string, r: NumberRange | undefined, exprParams: Array<string | number> = []): void => {
    if (!r) return;
    if (r.min !== undefined) {
      where.push(`${expr} >= ?`);
      params.push(...exprParams, r.min);
    }
    if (r.max !== undefined) {
      where.push(`${expr} <= ?`);
      params.push(...exprParams, r.max);
    }
  };
  inList('r.run_id', q.runIds);
  inList('r.split', q.splits);
  inList('r.status', q.statuses);
  inList('r.failure', q.failures);
  range('r.final_reward', q.reward);
  for (const [name, r] of Object.entries(q.criteria ?? {})) range('json_extract(r.criteria, ?)', r, [criterionPath(name)]);
  if (q.decision) {
    const alignment = q.decision === 'match' ? 'aligned' : q.decision === 'mismatch' ? 'misaligned' : 'other';
    where.push(decisionAlignmentSql(alignment, 'r.decision', 'r.expected_decision', labels));
  }
  if (q.agent !== undefined || q.promptVersion !== undefined || q.modelVersion !== undefined) {
    const cond = ['a.rid = r.rid'];
    for (const [column, value] of [['a.agent_id', q.agent], ['a.prompt_version_id', q.promptVersion], ['a.model_version_id', q.modelVersion]] as const) {
      if (value === undefined) continue;
      cond.push(`${column} = ${AGENT_STRING_ID}`);
      params.push(value);
    }
    where.push(`EXISTS (SELECT 1 FROM rollout_agents a WHERE ${cond.join(' AND ')})`);
  }
  if (q.simulated !== undefined) {
    where.push('r.simulated = ?');
    params.push(q.simulated ? 1 : 0);
  }
  const match = q.text === undefined ? null : ftsMatchExpression(q.text);
  if (match !== null) {
    // The full-text index is attached as `text` (see TextIndexDb) before a search.
    where.push('r.rid IN (SELECT d.rid FROM text.rollout_text_docs d WHERE d.docid IN (SELECT docid FROM text.rollout_text WHERE rollout_text MATCH ?))');
    params.push(match);
  }
  const whereSql = where.length ? `WHERE ${where.join(' AND ')}` : '';

  const sort = q.sort ?? 'startTime';
  const orderParams: Array<string | number> = [];
  let key: string;
  if (sort.startsWith('criterion:')) {
    key = 'json_extract(r.criteria, ?)';
    orderParams.push(criterionPath(sort.slice('criterion:'.length)));
  } else {
    key = sort === 'cost' ? costSql(prices) : (SORT_COLUMNS[sort as keyof typeof SORT_COLUMNS] ?? SORT_COLUMNS.startTime);
  }
  const dir = q.order === 'asc' ? 'ASC' : 'DESC';
  // Rows without a value go last either way. SQLite sorts NULL lowest, so DESC already does, and then an
  // index on the column (start time, reward, duration) serves the sort with no sorting at all.
  const orderSql = `ORDER BY ${key} ${dir}${dir === 'ASC' ? ' NULLS LAST' : ''}, r.rid ${dir}`;
  const limit = Math.max(0, Math.min(q.limit ?? DEFAULT_TABLE_PAGE, MAX_TABLE_PAGE));
  const offset = Math.max(0, Math.floor(q.offset ?? 0));
  return {
    countSql: `SELECT COUNT(*) AS n FROM rollouts r ${whereSql}`,
    countParams: params,
    pageSql: `SELECT ${PAGE_COLUMNS} FROM rollouts r ${whereSql} ${orderSql} LIMIT ? OFFSET ?`,
    pageParams: [...params, ...orderParams, limit, offset],
    idsSql: `SELECT r.id FROM rollouts r ${whereSql} ${orderSql}`,
    idsParams: [...params, ...orderParams],
  };
}

/** A JSON path to one key of the criteria object, whatever characters the name has. */
function criterionPath(name: string): string {
  return `$.${JSON.stringify(name)}`;
}

/** The cost of a rollout from its agents' tokens and their models' prices, for sorting (a page's costs are summed from its agents); NULL without prices. */
function costSql(prices: ModelPrices | null): string {
  const entries = Object.entries(prices ?? {}).filter(([, p]) => Number.isFinite(p.input) && Number.isFinite(p.output));
  if (!entries.length) return 'NULL';
  const literal = (s: string): string => `'${s.replace(/'/g, "''")}'`;
  const price = (side: 'input' | 'output'): string => `CASE m.value ${entries.map(([m, p]) => `WHEN ${literal(m)} THEN ${Number(p[side])}`).join(' ')} ELSE 0 END`;
  return `(SELECT SUM(a.input_tokens * (${price('input')}) + a.output_tokens * (${price('output')})) / 1000000.0 FROM rollout_agents a LEFT JOIN agent_strings m ON m.id = a.model_id WHERE a.rid = r.rid)`;
}

/** A rollout's cost from its agents' tokens; null when no price is configured (a model without a price costs nothing). */
export function rolloutCost(agents: ReadonlyArray<{ model: string | null; inputTokens: number; outputTokens: number }>, prices: ModelPrices | null): number | null {
  if (!prices || Object.keys(prices).length === 0) return null;
  let cost = 0;
  for (const a of agents) {
    const p = a.model === null ? undefined : prices[a.model];
    if (p) cost += (a.inputTokens * p.input + a.outputTokens * p.output) / 1_000_000;
  }
  return cost;
}
