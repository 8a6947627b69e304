import type { Lab } from '../../lab/lab';
import type { JobContext } from '../jobs/jobContext';
import { exportPhaseData } from './phaseData';
import { runPhase } from './runPhase';

/** The job context of an open lab: its loaded config, and the pipeline's export and local phases over its store and models. */
export function labJobContext(lab: Lab): JobContext {
  return {
    loaded: lab.loaded,
    exportPhaseData: (phase, opts) => exportPhaseData(lab, phase, opts),
    runLocalPhase: (name, opts) => runPhase(lab, name, opts),
  };
}
