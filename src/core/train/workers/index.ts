import type { WorkersConfig } from '../../config/workersSchema';
import { localWorkers } from './localWorkers';
import { slurmWorkers } from './slurmWorkers';
import type { WorkerPlaceName } from '../../config/workersSchema';
import type { WorkerPlace } from './workerPlace';


/** The place a name stands for, with its settings from lab.json's "workers". */
export function workerPlace(name: WorkerPlaceName, config: WorkersConfig): WorkerPlace {
  switch (name) {
    case 'local':
      return localWorkers;
    case 'slurm':
      return slurmWorkers(config.slurm);
  }
}

export { followWorkers, hasEnded, runOnWorkers, type WorkersProgress, type WorkersRunResult } from './coordinator';
export { WORKER_PLACES, type WorkerPlaceName, rerunCommand, shellWord, type WorkerGroup, type WorkerRequest, type WorkerStatus } from './workerPlace';
