import '@vscode-elements/elements/dist/vscode-button/index.js';
import '@vscode-elements/elements/dist/vscode-radio/index.js';
import '@vscode-elements/elements/dist/vscode-radio-group/index.js';
import '@vscode-elements/elements/dist/vscode-single-select/index.js';
import { startPanel } from '../shared/startPanel';
import { GraphViewApp } from './graphViewApp';

startPanel('graphView', GraphViewApp);
