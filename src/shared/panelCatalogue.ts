import type { CommandName, PanelKind, RequestMethod } from './protocol';

/**
 * Which requests and commands each panel may send: a panel's host answers
 * these and nothing else, so a panel that asks for another panel's method
 * gets an error instead of an answer. The methods themselves (parameter
 * schemas, result types) are declared once in protocol.ts and its per-panel
 * parts; several panels may share one (`trace/open`, `runs/list`).
 */
export const PANEL_CATALOGUE = {
  traceExplorer: {
    requests: ['trace/get'],
    commands: ['prompt/open'],
  },
  graphView: {
    requests: ['graph/describe', 'graph/rolloutOverlay', 'graph/aggregate', 'rollouts/list', 'runs/list'],
    commands: ['prompt/open', 'trace/filterNode'],
  },
  rewardCurve: {
    requests: ['rewards/series', 'rewards/learningCurve', 'export/save', 'runs/list'],
    commands: ['trace/open'],
  },
  rewardWeights: {
    requests: ['weights/get', 'weights/whatIf', 'weights/save', 'weights/rescore', 'air/validate', 'air/preview', 'rollouts/list', 'runs/list'],
    commands: ['trace/open', 'weights/openConfig'],
  },
  evalReport: {
    requests: ['report/get', 'report/runs', 'report/export'],
    commands: ['trace/open'],
  },
  comparison: {
    requests: ['comparison/list', 'comparison/get', 'comparison/task'],
    commands: ['trace/open', 'trace/diff'],
  },
  traceDiff: {
    requests: ['diff/get'],
    commands: ['trace/open'],
  },
  rolloutsTable: {
    requests: ['table/query', 'table/ids', 'table/facets'],
    commands: ['trace/open', 'trace/diff', 'table/export', 'table/rescore', 'table/addToDataset'],
  },
  trainingCurves: {
    requests: [],
    commands: ['job/showLog'],
  },
} as const satisfies Record<PanelKind, { requests: readonly RequestMethod[]; commands: readonly CommandName[] }>;

/** The requests a panel of kind K may make. */
export type PanelRequest<K extends PanelKind> = (typeof PANEL_CATALOGUE)[K]['requests'][number];
/** The commands a panel of kind K may send. */
export type PanelCommand<K extends PanelKind> = (typeof PANEL_CATALOGUE)[K]['commands'][number];

export function panelAnswers(kind: PanelKind, method: RequestMethod): boolean {
  return (PANEL_CATALOGUE[kind].requests as readonly string[]).includes(method);
}

export function panelRuns(kind: PanelKind, command: CommandName): boolean {
  return (PANEL_CATALOGUE[kind].commands as readonly string[]).includes(command);
}
