import '@vscode-elements/elements/dist/vscode-button/index.js';
import '@vscode-elements/elements/dist/vscode-single-select/index.js';
import { startPanel } from '../shared/startPanel';
import { ReportApp } from './reportApp';

startPanel('evalReport', ReportApp);
