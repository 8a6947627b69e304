import type { LabService } from '../labService';
import type { CommandHandlers, RequestHandlers } from '../webviews/panelHost';
import type { Panels } from '../panels';

/** The host's answers to the comparison panel's requests. */
export function comparisonRequestHandlers(service: LabService): RequestHandlers {
  void service;
  return {};
}

/** What the comparison panel may ask the editor to do. */
export function comparisonCommandHandlers(service: LabService, panels: () => Panels): CommandHandlers {
  void service;
  void panels;
  return {};
}
