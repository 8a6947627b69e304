import { HostClient } from '../shared/hostClient';
import { ComparisonApp } from './comparisonApp';

const client = new HostClient('comparison');
const app = new ComparisonApp(document.getElementById('app')!, client);
app.listen();
void client.ready();
void app.start();
