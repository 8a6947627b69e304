import * as vscode from 'vscode';

/**
 * Asks whether the simulated endpoint's rollouts count as training data (they
 * are left out unless the user says so); undefined when the picker is closed.
 */
export async function askIncludeSimulated(title: string, simulated: number): Promise<boolean | undefined> {
  const pick = await vscode.window.showQuickPick(
    [
      { label: 'Leave them out', description: 'the default: the simulator is a test double, its answers teach a model nothing real', include: false },
      { label: 'Include simulated rollouts', description: 'to try the training pipeline out', include: true },
    ],
    { title: `${title}: ${simulated} simulated rollouts`, placeHolder: `${simulated} rollouts in scope came from the simulated endpoint` },
  );
  return pick?.include;
}
