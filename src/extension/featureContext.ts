import type * as vscode from 'vscode';
import type { LabService } from './labService';
import type { Panels } from './panels';

/** What a feature of the extension gets to register its commands and reach the lab and the panels. */
export interface FeatureContext {
  extension: vscode.ExtensionContext;
  lab: LabService;
  panels(): Panels;
  output: vscode.OutputChannel;
  log(line: string): void;
  /** Registers a command whose errors reach the user as one clear message. */
  register(id: string, fn: (...args: unknown[]) => unknown): void;
}

/**
 * A command's argument object, or undefined when the command came from the
 * palette or a menu (no argument, or a tree item, which carries `kind` or
 * `contextValue`): then the command asks with pickers instead.
 */
export function commandArgument(raw: unknown): unknown {
  if (raw === undefined || raw === null) return undefined;
  if (typeof raw === 'object' && ('kind' in raw || 'contextValue' in raw)) return undefined;
  return raw;
}
