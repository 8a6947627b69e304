// Only the components the panel uses, so the bundle stays small.
import '@vscode-elements/elements/dist/vscode-badge/index.js';
import '@vscode-elements/elements/dist/vscode-button/index.js';
import '@vscode-elements/elements/dist/vscode-split-layout/index.js';
import '@vscode-elements/elements/dist/vscode-textfield/index.js';
import { HostClient } from '../shared/hostClient';
import { TraceExplorerApp } from './traceExplorerApp';

const root = document.getElementById('app') ?? document.body;
new TraceExplorerApp(root, new HostClient('traceExplorer')).start();
