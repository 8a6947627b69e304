import type { LabService } from '../labService';
import type { CommandHandlers, RequestHandlers } from '../webviews/panelHost';
import type { Panels } from '../panels';

/** The host's answers to the rewardWeights panel's requests. */
export function rewardWeightsRequestHandlers(service: LabService): RequestHandlers {
  void service;
  return {};
}

/** What the rewardWeights panel may ask the editor to do. */
export function rewardWeightsCommandHandlers(service: LabService, panels: () => Panels): CommandHandlers {
  void service;
  void panels;
  return {};
}
