import { core } from '../coreLoader';
import type { LabService } from '../labService';
import type { RequestHandlers } from '../webviews/panelHost';
import { UsageError } from '../../core/errors';
import { decisionLabelsOf } from '../../core/data/decisionAlignment';

/**
 * The host's answer to the trace diff panel: two stored rollouts aligned by
 * graph step. A rollout another process stored a moment ago may not be in the
 * catalog yet: a miss catches up once before it is reported.
 */
export function traceDiffRequestHandlers(service: LabService): RequestHandlers {
  return {
    'diff/get': async ({ left, right }) => {
      const { diffStoredRollouts } = await core.traceDiff();
      // Alignment under the decision mapping the lab's graph declares, as the table and the report read it.
      const diff = async (): Promise<ReturnType<typeof diffStoredRollouts>> => {
        const lab = await service.lab();
        return diffStoredRollouts(lab.store, left, right, decisionLabelsOf(lab.loaded.config));
      };
      try {
        return await diff();
      } catch (err) {
        if (!(err instanceof UsageError)) throw err;
        await service.refresh(service.activeFolder());
        return await diff();
      }
    },
  };
}
