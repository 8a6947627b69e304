import { duration } from '../../src/core/analysis/numberFormat';
import type { RolloutTableRow, TableSortKey } from '../../src/core/store/tableQuery';
import type { TableFacets } from '../../src/shared/tableProtocol';

/** One column of the table: its header, sort key, width and how a row's cell reads (always text). */
export interface Column {
  id: string;
  label: string;
  /** null: not sortable (a list of values). */
  sort: TableSortKey | null;
  width: number;
  numeric?: boolean;
  /** Longer text shown as the cell's tooltip (title), when it may be cut. */
  text(row: RolloutTableRow): string;
}

/** Local time as MM-DD HH:MM:SS: short, fixed width, sorts as it reads. */
function started(ms: number): string {
  const d = new Date(ms);
  const p = (n: number): string => String(n).padStart(2, '0');
  return `${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

export function score(x: number | null | undefined): string {
  return x === null || x === undefined ? '—' : x.toFixed(3);
}

export function count(x: number | null): string {
  return x === null ? '—' : x.toLocaleString('en-US');
}


export function money(x: number | null): string {
  if (x === null) return '—';
  return x < 0.01 ? x.toFixed(5) : x.toFixed(3);
}

function decision(r: RolloutTableRow): string {
  if (r.decision === null && r.expectedDecision === null) return '—';
  // The host computes alignment under the graph's decision mapping (GO stands for "yes"), as the report and the filter do.
  const mark = r.alignment === 'aligned' ? '✓' : r.alignment === 'misaligned' ? '✗' : '';
  return `${r.decision ?? '—'} / ${r.expectedDecision ?? '—'}${mark ? ` ${mark}` : ''}`;
}

/** The versions each agent ran: `Agent prompt·model@version`, hashes cut to 8 characters. */
export function versions(r: RolloutTableRow): string {
  return r.agents
    .map((a) => {
      const parts = [a.promptVersion ? a.promptVersion.slice(0, 8) : null, a.model ? `${a.model}${a.modelVersion ? `@${a.modelVersion}` : ''}` : null].filter(Boolean);
      return parts.length ? `${a.agent} ${parts.join(' · ')}` : a.agent;
    })
    .join('; ');
}

/** The columns for this lab: one per judge criterion, and cost only when some model has a price. */
export function columnsFor(facets: Pick<TableFacets, 'criteria' | 'prices'>): Column[] {
  const cols: Column[] = [
    { id: 'startTime', label: 'Started', sort: 'startTime', width: 124, text: (r) => started(r.startTime) },
    { id: 'run', label: 'Run', sort: 'run', width: 200, text: (r) => r.runId },
    { id: 'task', label: 'Task', sort: 'task', width: 110, text: (r) => (r.sample > 0 ? `${r.taskId} #${r.sample + 1}` : r.taskId) },
    { id: 'split', label: 'Split', sort: 'split', width: 52, text: (r) => r.split ?? '—' },
    { id: 'status', label: 'Status', sort: 'status', width: 82, text: (r) => (r.supersededBy ? `${r.status}, superseded` : r.status) },
    { id: 'failure', label: 'Failure', sort: 'failure', width: 96, text: (r) => r.failure ?? '' },
    { id: 'reward', label: 'Reward', sort: 'reward', width: 70, numeric: true, text: (r) => score(r.reward) },
  ];
  for (const c of facets.criteria) {
    cols.push({ id: `criterion:${c}`, label: c, sort: `criterion:${c}`, width: 84, numeric: true, text: (r) => score(r.criteria?.[c]) });
  }
  cols.push(
    { id: 'decision', label: 'Decision / expected', sort: 'decision', width: 130, text: decision },
    { id: 'turns', label: 'Turns', sort: 'turns', width: 56, numeric: true, text: (r) => count(r.turns) },
    { id: 'inputTokens', label: 'Tokens in', sort: 'inputTokens', width: 82, numeric: true, text: (r) => count(r.inputTokens) },
    { id: 'outputTokens', label: 'Tokens out', sort: 'outputTokens', width: 82, numeric: true, text: (r) => count(r.outputTokens) },
    { id: 'latency', label: 'Latency', sort: 'latency', width: 80, numeric: true, text: (r) => duration(r.latencyMs, '—') },
  );
  if (facets.prices) cols.push({ id: 'cost', label: 'Cost', sort: 'cost', width: 76, numeric: true, text: (r) => money(r.cost) });
  cols.push(
    { id: 'simulated', label: 'Endpoint', sort: 'simulated', width: 76, text: (r) => (r.simulated ? 'simulated' : 'real') },
    { id: 'versions', label: 'Versions (prompt · model)', sort: null, width: 360, text: versions },
  );
  return cols;
}

/** Whether a column sorts highest first on its first click (numbers and times do; names go A→Z). */
export function firstOrder(sort: TableSortKey): 'asc' | 'desc' {
  return ['run', 'task', 'split', 'status', 'failure', 'decision', 'simulated'].includes(sort) ? 'asc' : 'desc';
}
