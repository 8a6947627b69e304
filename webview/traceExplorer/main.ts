// Only the components the panel uses, so the bundle stays small.
import '@vscode-elements/elements/dist/vscode-badge/index.js';
import '@vscode-elements/elements/dist/vscode-button/index.js';
import '@vscode-elements/elements/dist/vscode-split-layout/index.js';
import '@vscode-elements/elements/dist/vscode-textfield/index.js';
import { startPanel } from '../shared/startPanel';
import { TraceExplorerApp } from './traceExplorerApp';

startPanel('traceExplorer', TraceExplorerApp);
