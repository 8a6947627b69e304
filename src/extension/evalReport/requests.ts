import type { LabService } from '../labService';
import type { CommandHandlers, RequestHandlers } from '../webviews/panelHost';
import type { Panels } from '../panels';

/** The host's answers to the evalReport panel's requests. */
export function evalReportRequestHandlers(service: LabService): RequestHandlers {
  void service;
  return {};
}

/** What the evalReport panel may ask the editor to do. */
export function evalReportCommandHandlers(service: LabService, panels: () => Panels): CommandHandlers {
  void service;
  void panels;
  return {};
}
