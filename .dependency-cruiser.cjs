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

// What src/shared and the webviews may take from core besides types (a type-only import ships no code):
// pure functions and schemas that run in a browser.
const CATALOGUE = [
  'src/core/trace/span\\.ts',
  'src/core/store/(types|tableQuery|failureKinds|rolloutText)\\.ts',
  'src/core/config/(schema|trainingSchema)\\.ts',
  'src/core/reward/(air|airRules|weighted)\\.ts',
  'src/core/analysis/(alignment|numberFormat|reportFormat|statistics)\\.ts',
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
      from: { pathNot: '^src/extension/|^test/(extension|unit/extension)/' },
      // Resolved through @types/vscode where it is installed; unresolved ('vscode') where it is not.
      to: { path: '^(vscode|node_modules/@types/vscode/.*)$' },
    },
    {
      name: 'extension-not-cli',
      comment: 'the extension and the CLI are two adapters over core: what both need belongs in core',
      severity: 'error',
      from: { path: '^src/extension/' },
      to: { path: '^src/cli/' },
    },
    {
      name: 'extension-loads-core-lazily-in-one-place',
      comment: 'activation loads no core module: the extension calls core functions through src/extension/coreLoader.ts (core.<module>()), not its own import()',
      severity: 'error',
      from: { path: '^src/extension/', pathNot: '^src/extension/coreLoader\\.ts$' },
      to: { path: '^src/core/', dependencyTypes: ['dynamic-import'] },
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
      to: { path: '^src/(core|extension|cli)/', pathNot: `^(${CATALOGUE.join('|')})$`, dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'webview-catalogue',
      comment: 'a webview runs in a browser: it imports src/shared, webview/ and only the catalogued core modules',
      severity: 'error',
      from: { path: '^webview/' },
      to: { path: '^src/', pathNot: `^(src/shared/|${CATALOGUE.join('|')}$)`, dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'webview-no-node',
      comment: 'a webview runs in a browser: no Node built-ins, directly or through what it imports',
      severity: 'error',
      from: { path: '^webview/' },
      to: { dependencyTypes: ['core'] },
    },
    {
      name: 'catalogue-is-closed',
      comment: 'a catalogued module runs in the browser too: it takes only other catalogued modules (types aside) and no Node built-ins',
      severity: 'error',
      from: { path: `^(${CATALOGUE.join('|')})$` },
      to: { path: '^src/', pathNot: `^(${CATALOGUE.join('|')})$`, dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'catalogue-no-node',
      severity: 'error',
      from: { path: `^(${CATALOGUE.join('|')})$` },
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
    exclude: { path: '^(out|dist)/' },
  },
};
