import type { WorkerPlaceName, WorkersConfig } from '../../config/workersSchema';
import { k8sWorkers } from './k8sWorkers';
import { localWorkers } from './localWorkers';
import { skypilotWorkers } from './skypilotWorkers';
import { slurmWorkers } from './slurmWorkers';
import type { WorkerPlace } from './workerPlace';


/** The place a name stands for, with its settings from lab.json's "workers". */
export function workerPlace(name: WorkerPlaceName, config: WorkersConfig): WorkerPlace {
  switch (name) {
    case 'local':
      return localWorkers;
    case 'slurm':
      return slurmWorkers(config.slurm);
    case 'k8s':
      return k8sWorkers(config.k8s);
    case 'skypilot':
      return skypilotWorkers(config.skypilot);
  }
}

export { followWorkers, hasEnded, runOnWorkers, type WorkersProgress, type WorkersRunResult } from './coordinator';
export { WORKER_PLACES, type WorkerPlaceName, rerunCommand, shellWord, type WorkerGroup, type WorkerRequest, type WorkerStatus } from './workerPlace';
