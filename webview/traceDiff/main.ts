import { HostClient } from '../shared/hostClient';
import { TraceDiffApp } from './traceDiffApp';

const client = new HostClient('traceDiff');
const app = new TraceDiffApp(document.getElementById('app')!, client);
app.listen();
void client.ready();
void app.start();
