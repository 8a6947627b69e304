import '@vscode-elements/elements/dist/vscode-button/index.js';
import '@vscode-elements/elements/dist/vscode-single-select/index.js';
import '@vscode-elements/elements/dist/vscode-textfield/index.js';
import { HostClient } from '../shared/hostClient';
import { WeightsApp } from './weightsApp';

const client = new HostClient('rewardWeights');
const app = new WeightsApp(document.getElementById('app')!, client);
app.listen();
void client.ready();
void app.start();
