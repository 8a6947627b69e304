import { core } from '../coreLoader';
import type { LabService } from '../labService';
import type { CommandHandlers, RequestHandlers } from '../webviews/panelHost';
import type { Panels } from '../panels';
import { UsageError } from '../../core/errors';
import { decisionLabelsOf } from '../../core/data/decisionAlignment';

/**
 * The host's answers to the comparison panel's requests, on the active lab's
 * store. A run another process wrote a moment ago may not be in the catalog
 * yet: a miss catches up once before it is reported.
 */
export function comparisonRequestHandlers(service: LabService): RequestHandlers {
  const retry = async <T>(fn: () => Promise<T>): Promise<T> => {
    try {
      return await fn();
    } catch (err) {
      if (!(err instanceof UsageError)) throw err;
      await service.refresh(service.activeFolder());
      return fn();
    }
  };
  return {
    'comparison/list': async () => {
      const { listComparisons } = await core.comparisonList();
      return { comparisons: listComparisons(await service.store()) };
    },
    'comparison/get': async ({ runA, runB }) => {
      const { compareRuns } = await core.comparison();
      const lab = await service.lab();
      return retry(async () => compareRuns(lab.store, runA, runB, Object.keys(lab.loaded.config.reward.criteria), decisionLabelsOf(lab.loaded.config)));
    },
    'comparison/task': async ({ runA, runB, taskId }) => {
      const { comparisonTask } = await core.comparisonTask();
      const lab = await service.lab();
      return retry(async () => comparisonTask(lab.store, { runA, runB }, taskId, decisionLabelsOf(lab.loaded.config)));
    },
  };
}

/** What the comparison panel may ask the editor to do: opening a rollout goes through the shared `trace/open`. */
export function comparisonCommandHandlers(service: LabService, panels: () => Panels): CommandHandlers {
  void service;
  void panels;
  return {};
}
