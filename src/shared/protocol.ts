import { z } from 'zod';
import type { SpanRecord } from '../core/trace/span';
import type { RolloutRecord, RunRecord } from '../core/store/types';
import type { GraphDescription } from '../core/lab/graphDescription';
import type { GraphAggregate, RolloutOverlay } from '../core/analysis/graphStats';
import type { RewardSeries } from '../core/analysis/rewardSeries';
import type { LearningCurve } from '../core/train/pipeline/learningCurve';
import { WeightsCommandArgs, WeightsRequestParams, type WeightsNotifications, type WeightsRequestResults } from './weightsProtocol';
import { ReportCommandArgs, ReportRequestParams, type ReportNotifications, type ReportRequestResults } from './reportProtocol';
import { ComparisonCommandArgs, ComparisonRequestParams, type ComparisonNotifications, type ComparisonRequestResults } from './comparisonProtocol';
import { TraceDiffRequestParams, type TraceDiffNotifications, type TraceDiffRequestResults } from './traceDiffProtocol';
import { TableCommandArgs, TableRequestParams, type TableRequestResults } from './tableProtocol';
import { CURVES_EVENTS, CurvesCommandArgs, type CurvesNotifications } from './trainingCurvesProtocol';

/**
 * The one message catalogue between the extension host and its webviews.
 * A webview sends `ready` once it listens, then requests (with ids) and
 * commands (fire and forget); the host answers each request with a response of
 * the same id and pushes notifications. Every method is declared once here with
 * its parameter schema (checked on the host: webview input is external input)
 * and its result type. Which panel may send which is in panelCatalogue.ts;
 * what each panel keeps in its saved state, in panelState.ts.
 */

export type { GraphDescription, GraphEdgeInfo, GraphNodeInfo } from '../core/lab/graphDescription';
export type { EdgeTraffic, GraphAggregate, NodeStats, RewardGroup, RolloutOverlay } from '../core/analysis/graphStats';
export type { RewardPoint, RewardSeries } from '../core/analysis/rewardSeries';

/** The lab's panels: one of each kind in a window. */
export const LabPanelKind = z.enum(['traceExplorer', 'graphView', 'rewardCurve', 'rewardWeights', 'evalReport', 'comparison', 'traceDiff', 'rolloutsTable']);
export type LabPanelKind = z.infer<typeof LabPanelKind>;
/** Every panel: the lab's, and Training Curves (one per training job). */
export const PanelKind = z.enum([...LabPanelKind.options, 'trainingCurves']);
export type PanelKind = z.infer<typeof PanelKind>;

const RolloutQueryParams = z.strictObject({
  runId: z.string().optional(),
  status: z.array(z.enum(['running', 'succeeded', 'failed', 'cancelled'])).optional(),
  split: z.enum(['train', 'val']).optional(),
  minReward: z.number().optional(),
  maxReward: z.number().optional(),
  limit: z.number().int().positive().max(100_000).optional(),
  offset: z.number().int().nonnegative().optional(),
});

export const RequestParams = {
  /** A rollout's spans; with offset/limit one page of them, in start-time order (a parent before its children). */
  'trace/get': z.strictObject({
    rolloutId: z.string().regex(/^[0-9a-f]{32}$/),
    offset: z.number().int().nonnegative().optional(),
    limit: z.number().int().positive().max(1_000_000).optional(),
  }),
  'rollouts/list': RolloutQueryParams,
  'runs/list': z.strictObject({}),
  'graph/describe': z.strictObject({}),
  'graph/rolloutOverlay': z.strictObject({ rolloutId: z.string().regex(/^[0-9a-f]{32}$/) }),
  'graph/aggregate': z.strictObject({ runId: z.string().optional() }),
  'rewards/series': z.strictObject({ runId: z.string().optional() }),
  /** Validation reward per version of each trained model (or of one agent's model). */
  'rewards/learningCurve': z.strictObject({ agent: z.string().min(1).optional() }),
  'export/save': z.strictObject({
    format: z.enum(['png', 'csv']),
    suggestedName: z.string().regex(/^[\w.-]+$/),
    /** base64 for png, text for csv */
    data: z.string().max(64 * 1024 * 1024),
  }),
  ...WeightsRequestParams,
  ...ReportRequestParams,
  ...ComparisonRequestParams,
  ...TraceDiffRequestParams,
  ...TableRequestParams,
} as const;
export type RequestMethod = keyof typeof RequestParams;
export type RequestParamsOf<M extends RequestMethod> = z.infer<(typeof RequestParams)[M]>;

export interface RequestResults extends WeightsRequestResults, ReportRequestResults, ComparisonRequestResults, TraceDiffRequestResults, TableRequestResults {
  /** `total`: how many spans the rollout has (present when a page was asked for). */
  'trace/get': { rollout: RolloutRecord; spans: SpanRecord[]; total?: number };
  'rollouts/list': { rollouts: RolloutRecord[]; total: number };
  'runs/list': { runs: RunRecord[] };
  'graph/describe': GraphDescription;
  'graph/rolloutOverlay': RolloutOverlay & { rolloutId: string };
  'graph/aggregate': GraphAggregate;
  'rewards/series': RewardSeries;
  'rewards/learningCurve': LearningCurve;
  'export/save': { saved: boolean; path: string | null };
}

export const CommandArgs = {
  /** Open the prompt file of an agent in an editor. */
  'prompt/open': z.strictObject({ agent: z.string().min(1) }),
  /** Show a rollout in the trace explorer, optionally filtered to one node. */
  'trace/open': z.strictObject({ rolloutId: z.string().regex(/^[0-9a-f]{32}$/), node: z.string().optional() }),
  /** Filter the trace explorer to a graph node (the latest rollout that visited it). */
  'trace/filterNode': z.strictObject({ node: z.string().min(1) }),
  /** Open the trace diff on two rollouts (left, right), aligned by graph step. */
  'trace/diff': z.strictObject({ left: z.string().regex(/^[0-9a-f]{32}$/), right: z.string().regex(/^[0-9a-f]{32}$/) }),
  ...WeightsCommandArgs,
  ...ReportCommandArgs,
  ...ComparisonCommandArgs,
  ...TableCommandArgs,
  ...CurvesCommandArgs,
} as const;
export type CommandName = keyof typeof CommandArgs;
export type CommandArgsOf<C extends CommandName> = z.infer<(typeof CommandArgs)[C]>;

export interface Notifications extends WeightsNotifications, ReportNotifications, ComparisonNotifications, TraceDiffNotifications, CurvesNotifications {
  /** The store changed (a rollout finished here or in another process). */
  'store/changed': { rollouts: number };
  /** Show this rollout (the host opened the panel for it). */
  'trace/show': { rolloutId: string; node?: string };
  /** Show this rollout's path on the graph. */
  'graph/showRollout': { rolloutId: string };
  /** Switch the reward curve to validation reward per model version. */
  'rewards/showLearningCurve': Record<string, never>;
}
export type NotificationType = keyof Notifications;

/**
 * Notifications that report an event rather than ask a panel to show something.
 * Every other notification is an intent ("show X"): the host remembers the latest
 * of each type and sends it again whenever the webview (re)loads, so a panel that
 * was hidden, discarded and loaded again still shows what was last asked of it.
 */
export const EVENT_NOTIFICATIONS: ReadonlySet<NotificationType> = new Set<NotificationType>(['store/changed', 'weights/configChanged', ...CURVES_EVENTS]);

/** Webview → host. */
export const WebviewMessage = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('ready'), panel: PanelKind }),
  z.strictObject({ kind: z.literal('request'), id: z.number().int().nonnegative(), method: z.string(), params: z.unknown() }),
  z.strictObject({ kind: z.literal('command'), command: z.string(), args: z.unknown() }),
]);
export type WebviewMessage = z.infer<typeof WebviewMessage>;

/** Host → webview. */
export type HostMessage =
  | { kind: 'response'; id: number; ok: true; result: unknown }
  | { kind: 'response'; id: number; ok: false; error: string }
  | { kind: 'notification'; type: NotificationType; params: Notifications[NotificationType]; intent?: string }
  /** After each `ready`: every queued notification and latest intent has been sent; a panel restores its saved view only if none of them asked for another. */
  | { kind: 'replayed' };

export function isRequestMethod(m: string): m is RequestMethod {
  return Object.prototype.hasOwnProperty.call(RequestParams, m);
}
export function isCommandName(c: string): c is CommandName {
  return Object.prototype.hasOwnProperty.call(CommandArgs, c);
}

