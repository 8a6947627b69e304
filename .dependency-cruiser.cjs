// The layer rules of docs/ARCHITECTURE.md, checked by `npm run lint` (part of `npm test`).
// Core's layers, lowest first; a module may import its own layer and the ones below it, never one above.
const LAYERS = [
  ['config', 'data'],
  ['llm', 'graph'],
  ['trace'],
  ['store'],
  ['otlp', 'gateway'],
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
  'src/core/trace/(span|requestedToolCalls)\\.ts',
  'src/core/store/(types|tableQuery|failureKinds|rolloutText)\\.ts',
  'src/core/config/(schema|trainingSchema|workersSchema)\\.ts',
  'src/core/reward/(air|airRules|weighted)\\.ts',
  'src/core/analysis/(numberFormat|reportFormat|statistics)\\.ts',
  'src/core/data/decisionAlignment\\.ts',
  'src/core/train/jobs/trainerEvents\\.ts',
];

/** One forbidden dependency: `from` may not import `to`; the comment says why (dependency-cruiser prints it). */
const forbid = (name, comment, from, to) => ({ name, comment, severity: 'error', from, to });
const catalogued = `^(${CATALOGUE.join('|')})$`;

module.exports = {
  forbidden: [
    ...LAYERS.slice(0, -1).map((rooms, i) =>
      forbid(
        `layer-${rooms.join('-')}`,
        `core/${rooms.join(', core/')} sits below core/${above(i).join(', core/')}: move the shared part down, or pass it in`,
        { path: core(rooms) },
        { path: core(above(i)) },
      ),
    ),
    forbid(
      'graph-not-llm',
      'llm/ is the model client every graph uses; it knows no graph',
      { path: '^src/core/llm/' },
      { path: '^src/core/graph/' },
    ),
    forbid(
      'train-jobs-narrow-context',
      "jobs and launchers work from a JobContext (train/jobs/jobContext.ts), not the Lab; what they need of the pipeline is passed in or lives in train/phases",
      { path: '^src/core/train/jobs/' },
      { path: '^src/core/(train/pipeline|lab)/' },
    ),
    forbid(
      'train-phases-below-jobs',
      "train/phases (the lab's phases, their records, the versions they register) is what jobs and the pipeline share: it knows neither, nor the Lab",
      { path: '^src/core/train/phases/' },
      { path: '^src/core/(train/(jobs|pipeline)|lab)/' },
    ),
    forbid(
      'research-lab-stays-in-its-graph',
      "the built-in research-lab graph's internals are its own: the judge, the runner, the store and the read models work for any graph",
      { path: '^src/core/(llm|trace|store|reward|rollout|analysis)/' },
      { path: '^src/core/graph/researchLab/' },
    ),
    forbid(
      'sim-only-from-lab',
      'the simulated endpoint is a test double: only lab/ (which starts it when a model has no endpoint) and the adapters start it',
      { path: '^src/core/', pathNot: '^src/core/(lab|sim)/' },
      { path: '^src/core/sim/' },
    ),
    forbid(
      'core-stays-core',
      'core never imports the editor, the CLI, the webview catalogue or the webviews',
      { path: '^src/core/' },
      { path: '^(src/(extension|cli|shared)|webview)/' },
    ),
    // Resolved through @types/vscode where it is installed; unresolved ('vscode') where it is not.
    forbid(
      'vscode-only-in-extension',
      "'vscode' exists only in the extension host: adapt core in src/extension",
      { pathNot: '^src/extension/|^test/(extension|unit/extension)/' },
      { path: '^(vscode|node_modules/@types/vscode/.*)$' },
    ),
    forbid(
      'extension-not-cli',
      'the extension and the CLI are two adapters over core: what both need belongs in core',
      { path: '^src/extension/' },
      { path: '^src/cli/' },
    ),
    forbid(
      'extension-loads-core-lazily-in-one-place',
      'activation loads no core module: the extension calls core functions through src/extension/coreLoader.ts (core.<module>()), not its own import()',
      { path: '^src/extension/', pathNot: '^src/extension/coreLoader\\.ts$' },
      { path: '^src/core/', dependencyTypes: ['dynamic-import'] },
    ),
    forbid(
      'cli-not-extension',
      'the CLI is the headless adapter: it needs neither the editor nor a panel',
      { path: '^src/cli/' },
      { path: '^(src/extension|webview)/' },
    ),
    forbid(
      'shared-catalogue',
      'src/shared (the message catalogue) takes from core only what the catalogue allows (types, pure browser-safe code)',
      { path: '^src/shared/' },
      { path: '^src/(core|extension|cli)/', pathNot: catalogued, dependencyTypesNot: ['type-only'] },
    ),
    forbid(
      'webview-catalogue',
      'a webview runs in a browser: it imports src/shared, webview/ and only the catalogued core modules',
      { path: '^webview/' },
      { path: '^src/', pathNot: `^(src/shared/|${CATALOGUE.join('|')}$)`, dependencyTypesNot: ['type-only'] },
    ),
    forbid(
      'webview-no-node',
      'a webview runs in a browser: no Node built-ins, directly or through what it imports',
      { path: '^webview/' },
      { dependencyTypes: ['core'] },
    ),
    forbid(
      'catalogue-is-closed',
      'a catalogued module runs in the browser too: it takes only other catalogued modules (types aside) and no Node built-ins',
      { path: catalogued },
      { path: '^src/', pathNot: catalogued, dependencyTypesNot: ['type-only'] },
    ),
    forbid(
      'catalogue-no-node',
      'a catalogued module runs in the browser: no Node built-ins',
      { path: catalogued },
      { dependencyTypes: ['core'] },
    ),
    forbid(
      'no-cycles',
      'a cycle hides which module is lower: cut it where the lower part can stand alone',
      { path: '^src/' },
      { circular: true },
    ),
  ],
  options: {
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(out|dist)/' },
  },
};
