import '@vscode-elements/elements/dist/vscode-button/index.js';
import '@vscode-elements/elements/dist/vscode-single-select/index.js';
import { HostClient } from '../shared/hostClient';
import { ReportApp } from './reportApp';

const client = new HostClient('evalReport');
const app = new ReportApp(document.getElementById('app')!, client);
app.listen();
void client.ready();
void app.start();
