import '@vscode-elements/elements/dist/vscode-button/index.js';
import '@vscode-elements/elements/dist/vscode-radio/index.js';
import '@vscode-elements/elements/dist/vscode-radio-group/index.js';
import '@vscode-elements/elements/dist/vscode-single-select/index.js';
import { HostClient } from '../shared/hostClient';
import { GraphViewApp } from './graphViewApp';

const client = new HostClient('graphView');
const app = new GraphViewApp(document.getElementById('app')!, client);
app.listen();
void client.ready();
void app.start();
