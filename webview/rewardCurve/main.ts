import '@vscode-elements/elements/dist/vscode-button/index.js';
import '@vscode-elements/elements/dist/vscode-checkbox/index.js';
import '@vscode-elements/elements/dist/vscode-single-select/index.js';
import '@vscode-elements/elements/dist/vscode-textfield/index.js';
import { HostClient } from '../shared/hostClient';
import { RewardCurveApp } from './rewardCurveApp';

const client = new HostClient('rewardCurve');
const app = new RewardCurveApp(document.getElementById('app')!, client);
app.listen();
void client.ready();
void app.start();
