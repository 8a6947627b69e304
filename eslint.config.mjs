// The house rules a reader would otherwise learn from review (docs/ARCHITECTURE.md); the layer order itself is
// checked by dependency-cruiser (.dependency-cruiser.cjs). Both run in `npm run lint`, part of `npm test`.
import tsParser from '@typescript-eslint/parser';

const noDefaultExport = [
  'error',
  { selector: 'ExportDefaultDeclaration', message: 'Named exports only: a name is what a reader searches for.' },
  { selector: "ExportSpecifier[exported.name='default']", message: 'Named exports only: a name is what a reader searches for.' },
];
const noVscode = ['error', { paths: [{ name: 'vscode', message: "'vscode' exists only in the extension host: adapt core in src/extension." }] }];

export default [
  // Fixtures stand for users' own graph and reward modules, which may export a default.
  { ignores: ['node_modules/', 'out/', 'dist/', '.cache/', 'test-results/', 'python-trainer/', 'python-agent/', '.venv*/', '.bench/', 'demo-workspace/', '**/fixtures/'] },
  {
    files: ['src/**/*.ts', 'webview/**/*.ts', 'bench/**/*.ts', 'scripts/**/*.ts'],
    languageOptions: { parser: tsParser, ecmaVersion: 'latest', sourceType: 'module' },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: { 'no-restricted-syntax': noDefaultExport },
  },
  {
    files: ['src/core/**/*.ts', 'src/shared/**/*.ts', 'src/cli/**/*.ts', 'webview/**/*.ts'],
    rules: { 'no-restricted-imports': noVscode },
  },
];
