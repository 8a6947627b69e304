import { core } from '../coreLoader';
import type { LoadedConfig } from '../../core/config/loader';
import type { AirRuleIssue } from '../../core/reward/airRules';
import type { RequestResults } from '../../shared/protocol';
import { findRollout } from '../labRequests';
import type { LabService } from '../labService';
import type { Panels } from '../panels';
import { revealJsonPath } from '../webviewCommands';
import type { CommandHandlers, RequestHandlers } from '../webviews/panelHost';
import { rescoreStored } from './rescoreAction';

/**
 * The host's answers to the reward-weight editor. lab.json is read from disk
 * on each request (the form edits it, and so may the user), the store is the
 * lab's; core modules load on first use, as everywhere in the extension.
 */
export function rewardWeightsRequestHandlers(service: LabService): RequestHandlers {
  return {
    'weights/get': async () => {
      const { weightsConfig } = await import('./weightsData');
      return weightsConfig(await currentConfig(service), await service.store());
    },
    'weights/whatIf': async (p) => {
      const { whatIf } = await import('./weightsData');
      return whatIf(await service.store(), p);
    },
    'weights/save': async ({ criteria, air }): Promise<RequestResults['weights/save']> => {
      const folder = service.resolveFolder();
      const loaded = await currentConfig(service);
      const { writeLabJsonChanges } = await core.labJsonEdit();
      const { criteriaList } = await import('./weightsData');
      let rules: unknown[] | undefined;
      if (air !== undefined) {
        const { knownAirTargets, validateAirRules } = await core.airRules();
        const checked = validateAirRules(air, knownAirTargets(loaded.config));
        const errors = checked.issues.filter((i) => i.severity === 'error');
        if (!checked.rules || errors.length) throw new Error(`not saved: the AIR rules have ${errors.length || 'some'} error(s): ${describeIssues(errors)}`);
        rules = checked.rules;
      }
      const { config, changed } = await writeLabJsonChanges(loaded.file, { criteria, ...(rules ? { air: rules } : {}) });
      // New rollouts must score with what was just saved, without waiting for the file watcher.
      if (changed) service.invalidate(folder);
      return { file: loaded.file, criteria: criteriaList(config), air: config.air };
    },
    'weights/rescore': async ({ runId, split, expect, note }) => rescoreStored(service, { runId, split, expect, note }),
    'air/validate': async ({ rules }) => {
      const { validateAir } = await import('./weightsData');
      return validateAir((await currentConfig(service)).config, rules);
    },
    'air/preview': async ({ rules, rolloutId }) => {
      const { airPreview } = await import('./weightsData');
      const { config } = await currentConfig(service);
      const { store, rollout } = await findRollout(service, rolloutId);
      return airPreview(config, store, rollout, rules);
    },
  };
}

/** What the reward-weight editor may ask the editor to do (showing a rollout goes through 'trace/open'). */
export function rewardWeightsCommandHandlers(service: LabService, panels: () => Panels): CommandHandlers {
  void panels;
  return {
    'weights/openConfig': async ({ at }) => {
      const file = (await currentConfig(service)).file;
      await revealJsonPath(file, at === 'air' ? ['air'] : at === 'criteria' ? ['reward', 'criteria'] : []);
    },
  };
}

async function currentConfig(service: LabService): Promise<LoadedConfig> {
  const { loadConfig } = await core.config();
  return loadConfig(service.resolveFolder());
}

function describeIssues(issues: readonly AirRuleIssue[]): string {
  const shown = issues.slice(0, 3).map((i) => `${i.path}: ${i.message}`);
  return shown.join('; ') + (issues.length > 3 ? `; and ${issues.length - 3} more` : '');
}
