import path from 'node:path';

/** Folder of a workspace that holds the lab config, prompts, data tables and the trace store. */
export const LAB_DIR_NAME = '.rollout-lab';
export const LAB_FILE_NAME = 'lab.json';
export const LAB_SCHEMA_FILE_NAME = 'lab.schema.json';

export interface LabPaths {
  workspaceDir: string;
  labDir: string;
  file: string;
  schemaFile: string;
}

export function labPaths(workspaceDir: string): LabPaths {
  const ws = path.resolve(workspaceDir);
  const labDir = path.join(ws, LAB_DIR_NAME);
  return {
    workspaceDir: ws,
    labDir,
    file: path.join(labDir, LAB_FILE_NAME),
    schemaFile: path.join(labDir, LAB_SCHEMA_FILE_NAME),
  };
}
