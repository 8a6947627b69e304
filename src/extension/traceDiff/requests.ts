import { core } from '../coreLoader';
import type { LabService } from '../labService';
import type { RequestHandlers } from '../webviews/panelHost';
import { UsageError } from '../../core/errors';

/**
 * The host's answer to the trace diff panel: two stored rollouts aligned by
 * graph step. A rollout another process stored a moment ago may not be in the
 * catalog yet: a miss catches up once before it is reported.
 */
export function traceDiffRequestHandlers(service: LabService): RequestHandlers {
  return {
    'diff/get': async ({ left, right }) => {
      const { diffStoredRollouts } = await core.traceDiff();
      try {
        return diffStoredRollouts(await service.store(), left, right);
      } catch (err) {
        if (!(err instanceof UsageError)) throw err;
        await service.refresh(service.activeFolder());
        return diffStoredRollouts(await service.store(), left, right);
      }
    },
  };
}
