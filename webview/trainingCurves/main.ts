import '@vscode-elements/elements/dist/vscode-button/index.js';
import { CurvesApp } from './curvesApp';
import { CurvesClient } from './curvesClient';

const client = new CurvesClient();
const app = new CurvesApp(document.getElementById('app')!, client);
app.listen();
void client.ready();
