// The layer rules of docs/ARCHITECTURE.md, checked by `npm run lint` (part of `npm test`).
// Core's layers, lowest first; a module may import its own layer and the ones below it, never one above.
const LAYERS = [
  ['config', 'data'],
  ['llm', 'graph'],
  ['trace'],
  ['store'],
  ['reward'],
  ['policy'],
  ['rollout'],
  ['analysis'],
  ['lab'],
  ['train'],
];
const core = (rooms) => `^src/core/(${rooms.join('|')})/`;
const above = (i) => LAYERS.slice(i + 1).flat();

// What src/shared and the webviews may take from core: types and pure functions that run in a browser.
const CATALOGUE = [
  'src/core/trace/span\\.ts',
  'src/core/store/(types|tableQuery|failureKinds)\\.ts',
  'src/core/config/schema\\.ts',
  'src/core/config/trainingSchema\\.ts',
  'src/core/reward/airRules\\.ts',
  'src/core/reward/air\\.ts',
  'src/core/analysis/[^/]+\\.ts',
  'src/core/lab/labViews\\.ts',
  'src/core/train/pipeline/learningCurve\\.ts',
  'src/core/train/jobs/trainerEvents\\.ts',
];

module.exports = {
  forbidden: [
    ...LAYERS.slice(0, -1).map((rooms, i) => ({
      name: `layer-${rooms.join('-')}`,
      comment: `core/${rooms.join(', core/')} sits below core/${above(i).join(', core/')}: move the shared part down, or pass it in`,
      severity: 'error',
      from: { path: core(rooms) },
      to: { path: core(above(i)) },
    })),
    {
      name: 'graph-not-llm',
      comment: 'llm/ is the model client every graph uses; it knows no graph',
      severity: 'error',
      from: { path: '^src/core/llm/' },
      to: { path: '^src/core/graph/' },
    },
    {
      name: 'train-jobs-narrow-context',
      comment: "jobs and launchers work from a JobContext (train/jobs/jobContext.ts), not the Lab; what they need of the pipeline is passed in or lives in train/phases",
      severity: 'error',
      from: { path: '^src/core/train/jobs/' },
      to: { path: '^src/core/(train/pipeline|lab)/' },
    },
    {
      name: 'train-phases-below-jobs',
      comment: "train/phases (the lab's phases, their records, the versions they register) is what jobs and the pipeline share: it knows neither, nor the Lab",
      severity: 'error',
      from: { path: '^src/core/train/phases/' },
      to: { path: '^src/core/(train/(jobs|pipeline)|lab)/' },
    },
    {
      name: 'research-lab-stays-in-its-graph',
      comment: "the built-in research-lab graph's internals are its own: the judge, the runner, the store and the read models work for any graph",
      severity: 'error',
      from: { path: '^src/core/(llm|trace|store|reward|rollout|analysis)/' },
      to: { path: '^src/core/graph/researchLab/' },
    },
    {
      name: 'sim-only-from-lab',
      comment: 'the simulated endpoint is a test double: only lab/ (which starts it when a model has no endpoint) and the adapters start it',
      severity: 'error',
      from: { path: '^src/core/', pathNot: '^src/core/(lab|sim)/' },
      to: { path: '^src/core/sim/' },
    },
    {
      name: 'core-stays-core',
      comment: 'core never imports the editor, the CLI, the webview catalogue or the webviews',
      severity: 'error',
      from: { path: '^src/core/' },
      to: { path: '^(src/(extension|cli|shared)|webview)/' },
    },
    {
      name: 'vscode-only-in-extension',
      comment: "'vscode' exists only in the extension host: adapt core in src/extension",
      severity: 'error',
      from: { pathNot: '^src/extension/|^test/extension/' },
      to: { path: '^vscode$', dependencyTypes: ['core', 'unknown', 'npm', 'undetermined'] },
    },
    {
      name: 'extension-not-cli',
      comment: 'the extension and the CLI are two adapters over core: what both need belongs in core',
      severity: 'error',
      from: { path: '^src/extension/' },
      to: { path: '^src/cli/' },
    },
    {
      name: 'cli-not-extension',
      severity: 'error',
      from: { path: '^src/cli/' },
      to: { path: '^(src/extension|webview)/' },
    },
    {
      name: 'shared-catalogue',
      comment: 'src/shared (the message catalogue) takes from core only what the catalogue allows (types, pure browser-safe code)',
      severity: 'error',
      from: { path: '^src/shared/' },
      to: { path: '^src/(core|extension|cli)/', pathNot: `^(${CATALOGUE.join('|')})$` },
    },
    {
      name: 'webview-catalogue',
      comment: 'a webview runs in a browser: it imports src/shared, webview/ and only the catalogued core modules',
      severity: 'error',
      from: { path: '^webview/' },
      to: { path: '^src/', pathNot: `^(src/shared/|${CATALOGUE.join('|')}$)` },
    },
    {
      name: 'webview-no-node',
      comment: 'a webview runs in a browser: no Node built-ins, directly or through what it imports',
      severity: 'error',
      from: { path: '^webview/' },
      to: { dependencyTypes: ['core'] },
    },
    {
      name: 'no-circular-layers',
      comment: 'a cycle between folders hides which one is lower',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true, viaOnly: { pathNot: '^src/core/[^/]+/[^/]+\\.ts$' } },
    },
  ],
  options: {
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(node_modules|out|dist)/' },
  },
};
