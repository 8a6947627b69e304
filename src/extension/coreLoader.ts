/**
 * The core modules the extension uses, each loaded on first use: activation
 * stays fast because nothing here runs until a command, a view or a panel
 * asks (esbuild bundles each import() below as a module that is evaluated
 * when first awaited): `const { loadConfig } = await core.config()`. Types,
 * errors and small pure helpers (formatting, schemas) may still be imported
 * statically; anything that pulls in the store, the graphs or the trainer
 * comes through here (`npm run lint` rejects an import() of core elsewhere).
 */
export const core = {
  // config
  config: () => import('../core/config/loader'),
  labJsonEdit: () => import('../core/config/labJsonEdit'),
  modelRegistry: () => import('../core/config/modelRegistry'),
  variantSpec: () => import('../core/config/variantSpec'),
  // store, otlp
  traceStore: () => import('../core/store/traceStore'),
  otlpReceiver: () => import('../core/otlp/otlpReceiver'),
  // trace, reward, rollout
  langchainTracer: () => import('../core/trace/langchainTracer'),
  airRules: () => import('../core/reward/airRules'),
  runWarnings: () => import('../core/rollout/runWarnings'),
  // analysis (the read models)
  comparison: () => import('../core/analysis/comparison'),
  evaluationReport: () => import('../core/analysis/evaluationReport'),
  metricsTable: () => import('../core/analysis/metricsTable'),
  promptStats: () => import('../core/analysis/promptStats'),
  reportFormat: () => import('../core/analysis/reportFormat'),
  rescoreStore: () => import('../core/analysis/rescoreStore'),
  traceDiff: () => import('../core/analysis/traceDiff'),
  graphStats: () => import('../core/analysis/graphStats'),
  rewardSeries: () => import('../core/analysis/rewardSeries'),
  comparisonList: () => import('../core/analysis/comparisonList'),
  comparisonTask: () => import('../core/analysis/comparisonTask'),
  // lab (composition)
  lab: () => import('../core/lab/lab'),
  batch: () => import('../core/lab/batch'),
  graphDescription: () => import('../core/lab/graphDescription'),
  init: () => import('../core/lab/init'),
  addToDataset: () => import('../core/lab/addToDataset'),
  runComparison: () => import('../core/lab/runComparison'),
  // train
  exportData: () => import('../core/train/export/exportData'),
  preflight: () => import('../core/train/export/preflight'),
  preflightText: () => import('../core/train/export/preflightText'),
  rolloutSelection: () => import('../core/train/export/adapters/rolloutSelection'),
  trainingDefaults: () => import('../core/train/export/trainingDefaults'),
  jobRecord: () => import('../core/train/jobs/jobRecord'),
  jobBundle: () => import('../core/train/jobs/jobBundle'),
  dryRunText: () => import('../core/train/jobs/dryRunText'),
  learningCurve: () => import('../core/train/pipeline/learningCurve'),
  onlineTraining: () => import('../core/train/pipeline/onlineTraining'),
  policyStore: () => import('../core/train/bandit/policyStore'),
  applyPrompt: () => import('../core/train/apo/applyPrompt'),
  optimizePrompt: () => import('../core/train/apo/optimizePrompt'),
  pipelineState: () => import('../core/train/phases/pipelineState'),
  labJobContext: () => import('../core/train/pipeline/labJobContext'),
  jobLifecycle: () => import('../core/train/jobs/jobLifecycle'),
  phases: () => import('../core/train/phases/phases'),
  jobContext: () => import('../core/train/jobs/jobContext'),
  workers: () => import('../core/train/workers'),
  jobDraft: () => import('../core/train/jobs/jobDraft'),
  localPython: () => import('../core/train/jobs/launchers/localPython'),
  trainPhase: () => import('../core/train/jobs/trainPhase'),
  runPhase: () => import('../core/train/pipeline/runPhase'),
  pipelineStatus: () => import('../core/train/pipeline/pipelineStatus'),
  // the simulated endpoint (a test double users can start)
  simServer: () => import('../core/sim/simServer'),
};
