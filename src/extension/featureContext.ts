import * as vscode from 'vscode';
import type { ContextKeys } from './contextKeys';
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
  /** The context keys the walkthrough's steps tick off on. */
  contextKeys: ContextKeys;
}

/**
 * What a menu passes a command instead of options: an element of one of the
 * extension's tree views (view/title gets the focused row, view/item/context
 * the row clicked; every element carries `kind`, VS Code's own items
 * `contextValue`) or a resource's URI (editor and explorer menus).
 */
export function isMenuArgument(raw: unknown): boolean {
  if (typeof raw !== 'object' || raw === null) return false;
  return 'kind' in raw || 'contextValue' in raw || raw instanceof vscode.Uri;
}

/**
 * A command's argument object, or undefined when the command came from the
 * palette or a menu (no argument, a tree item or a URI): then the command
 * asks with pickers instead. Anything else is an options object the caller
 * validates, with a clear error when it is wrong.
 */
export function commandArgument(raw: unknown): unknown {
  if (raw === undefined || raw === null || isMenuArgument(raw)) return undefined;
  return raw;
}
