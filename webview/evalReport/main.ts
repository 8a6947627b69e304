import { HostClient } from '../shared/hostClient';

const host = new HostClient('evalReport');
host.ready();
