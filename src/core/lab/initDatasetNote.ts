import { LAB_DIR_NAME } from '../config/labPaths';
import { BUNDLED_SAMPLE_SIZE, BUNDLED_SAMPLE_SOURCE } from './bundledSample';
import type { InitResult } from './init';

/**
 * The line that says which dataset a new lab got, so a first run never
 * leaves the user guessing whether the numbers come from 200 or 1,000 items.
 * `beside` words where the full set would go (the clone for the demo, else
 * the workspace); `other` how to give another dataset where the note is read.
 */
export function initDatasetNote(dataset: NonNullable<InitResult['dataset']>, beside: 'clone' | 'workspace', other = 'pass --dataset FILE'): string {
  switch (dataset.source) {
    case 'sample':
      return `using the bundled ${BUNDLED_SAMPLE_SIZE}-item PubMedQA sample (${BUNDLED_SAMPLE_SOURCE}, copied to ${dataset.path}); ${other} or put ../shared/data/pubmedqa beside the ${beside} for the full set`;
    case 'shared':
      return `using the full PubMedQA set beside the ${beside}: ${dataset.path}`;
    case 'given': {
      if (dataset.unmappedColumns) {
        return `using dataset "${dataset.name}" (${dataset.path}); its rows are not in the project's own shape (goal, context) and no column looks like the goal (columns: ${dataset.unmappedColumns.join(', ') || 'none'}) — set "fields": {"goal": "COLUMN"} under datasets.${dataset.name} in ${LAB_DIR_NAME}/lab.json`;
      }
      const mapped = dataset.fields ? Object.entries(dataset.fields).filter(([, v]) => v !== undefined && (!Array.isArray(v) || v.length > 0)) : [];
      const mapping = mapped.length ? `; its rows map as ${mapped.map(([k, v]) => `${k} ← ${Array.isArray(v) ? v.join(', ') : String(v)}`).join(', ')} ("fields" of datasets.${dataset.name} in ${LAB_DIR_NAME}/lab.json: edit it if a column is wrong)` : '';
      return `using dataset "${dataset.name}" (${dataset.path})${mapping}`;
    }
  }
}
