import * as z from 'zod/mini';
import type { PanelKind } from './protocol';

/*
 * What each panel keeps with getState/setState: the view it shows, restored
 * when the page loads again (hidden and discarded, or after a window reload,
 * when the host's serializer reads it too). The state comes back from
 * outside the page's own code, so it is checked here, once, field by field:
 * a field that does not fit is dropped, the rest kept. zod/mini keeps the
 * webview bundles small.
 */

/** A field a panel may have saved; one that does not fit its schema reads as absent. */
const kept = <T extends z.core.SomeType>(t: T) => z.catch(z.optional(t), undefined);
const text = kept(z.string());
const flag = kept(z.boolean());
const rolloutId = kept(z.string().check(z.regex(/^[0-9a-f]{32}$/)));

const Draft = z.object({
  criteria: z.array(z.object({ key: z.string(), name: z.string(), description: z.string(), weight: z.string() })),
  air: z.array(z.object({ key: z.string(), name: z.string(), when: z.string(), agents: z.string(), tools: z.string(), reward: z.string() })),
});

export const PANEL_STATES = {
  traceExplorer: z.object({ rolloutId, node: text, selected: text, collapsed: kept(z.array(z.string())), search: text }),
  graphView: z.object({ mode: kept(z.enum(['structure', 'rollout', 'aggregate'])), rolloutId: text, runId: text }),
  rewardCurve: z.object({
    view: kept(z.enum(['rollouts', 'versions'])),
    /** Rolling mean window, in rollouts. */
    window: kept(z.number().check(z.gte(1))),
    /** How points are split: 'none', 'prompt:<agent>' or 'model:<agent>'. */
    split: text,
    criteria: kept(z.array(z.string())),
    runId: text,
    table: flag,
    fullScale: flag,
  }),
  rewardWeights: z.object({ runId: text, split: kept(z.enum(['train', 'val'])), rolloutId, draft: kept(Draft) }),
  evalReport: z.object({ runId: text }),
  comparison: z.object({ runA: text, runB: text, taskId: text, sort: kept(z.enum(['diff-desc', 'diff-asc', 'task'])) }),
  traceDiff: z.object({ left: text, right: text, onlyDifferences: flag }),
  rolloutsTable: z.object({
    /** The table's filters (a table query without sort and page). */
    filters: kept(z.record(z.string(), z.unknown())),
    sort: text,
    order: kept(z.enum(['asc', 'desc'])),
  }),
  trainingCurves: z.object({ jobId: text, folder: text }),
} as const satisfies Record<PanelKind, z.ZodMiniObject>;

/** Every panel's state also records the intents it acted on (see HostClient): the id of the last one of each type. */
const Intents = z.object({ intents: kept(z.record(z.string(), z.string())) });

export type PanelState<K extends PanelKind> = z.infer<(typeof PANEL_STATES)[K]> & z.infer<typeof Intents>;

/** A panel's saved state, checked: {} for none, and only the fields that fit. */
export function parsePanelState<K extends PanelKind>(kind: K, raw: unknown): PanelState<K> {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return {} as PanelState<K>;
  const state: Record<string, unknown> = { ...(z.parse(PANEL_STATES[kind], raw) as object), ...z.parse(Intents, raw) };
  for (const k of Object.keys(state)) if (state[k] === undefined) delete state[k];
  return state as PanelState<K>;
}
