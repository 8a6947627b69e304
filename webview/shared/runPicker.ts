import type { VscodeSingleSelect } from '@vscode-elements/elements/dist/vscode-single-select/vscode-single-select.js';
import type { RunRecord } from '../../src/core/store/types';
import type { RequestResults } from '../../src/shared/protocol';

/** A client of a panel whose catalogue has `runs/list`. */
interface RunsClient {
  request(method: 'runs/list', params: Record<string, never>): Promise<RequestResults['runs/list']>;
}

/** Fills a run picker: "All runs" first, then the store's runs. */
export async function fillRunPicker(client: RunsClient, picker: VscodeSingleSelect, runId: string | null): Promise<RunRecord[]> {
  let runs: RunRecord[];
  try {
    runs = (await client.request('runs/list', {})).runs;
  } catch {
    runs = [];
  }
  picker.options = [
    { label: 'All runs', value: '', description: '', selected: runId === null, disabled: false },
    ...runs.map((r) => ({
      label: `${r.id} · ${new Date(r.startTime).toLocaleString()}`,
      value: r.id,
      description: r.status,
      selected: r.id === runId,
      disabled: false,
    })),
  ];
  picker.value = runId ?? '';
  return runs;
}
