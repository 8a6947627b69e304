import { HostClient } from '../shared/hostClient';
import { TableApp } from './tableApp';

const client = new HostClient('rolloutsTable');
const app = new TableApp(document.getElementById('app')!, client);
app.listen();
void client.ready();
void app.start();
