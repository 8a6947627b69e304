import { HostClient } from '../shared/hostClient';

const host = new HostClient('comparison');
host.ready();
