import { HostClient } from '../shared/hostClient';

const host = new HostClient('rewardWeights');
host.ready();
