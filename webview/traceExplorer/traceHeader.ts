import { statusText } from '../../src/core/store/failureKinds';
import type { RolloutRecord } from '../../src/core/store/types';
import type { SpanRecord } from '../../src/core/trace/span';
import { Attr } from '../../src/core/trace/span';
import { clear, codicon, el } from './dom';
import { formatMs, formatScore, shortId } from './format';

const STATUS_ICON: Record<RolloutRecord['status'], string> = {
  running: 'loading',
  succeeded: 'pass',
  failed: 'error',
  cancelled: 'circle-slash',
};

/** The rollout's identity line (id, task, status, reward, decision) and, for simulated rollouts or spans in a parent cycle, a banner saying so. */
export function renderHeader(box: HTMLElement, rollout: RolloutRecord, root: SpanRecord | undefined, simulated: boolean, inCycle = 0): void {
  clear(box);
  const line = el('div', 'te-header-line');
  const id = el('span', 'te-rollout-id', `Rollout ${shortId(rollout.id, 12)}`);
  id.title = rollout.id;
  line.append(id);
  const item = (label: string, value: string, className = ''): void => {
    const s = el('span', `te-header-item${className ? ' ' + className : ''}`);
    s.append(el('span', 'te-muted', label), el('span', 'te-header-value', value));
    line.append(s);
  };
  item('task', rollout.split ? `${rollout.taskId} (${rollout.split})` : rollout.taskId);
  const status = el('span', `te-header-item te-status te-status-${rollout.status}`);
  status.append(codicon(STATUS_ICON[rollout.status] ?? 'circle', rollout.status === 'running' ? 'codicon-modifier-spin' : ''), el('span', 'te-header-value', statusText(rollout)));
  line.append(status);
  item('reward', formatScore(rollout.finalReward), 'te-reward-value');
  if (rollout.decision !== null || rollout.expectedDecision !== null) {
    const d = rollout.decision ?? '–';
    item('decision', rollout.expectedDecision ? `${d} (expected ${rollout.expectedDecision})` : d);
  }
  if (rollout.endTime !== null) item('took', formatMs(rollout.endTime - rollout.startTime));
  item('run', rollout.runId);
  box.append(line);
  const goal = root?.attributes[Attr.taskGoal];
  if (typeof goal === 'string' && goal) {
    const g = el('div', 'te-goal te-muted', goal);
    g.title = goal;
    box.append(g);
  }
  if (rollout.error) box.append(el('div', 'te-error-text te-rollout-error', rollout.error));
  if (inCycle) {
    const b = el('div', 'banner te-cycle');
    b.setAttribute('role', 'note');
    b.append(
      codicon('warning'),
      el('span', undefined, ` ${inCycle} span${inCycle === 1 ? ' is' : 's are'} in a parent cycle (their parents lead back to themselves): shown under the rollout.`),
    );
    box.append(b);
  }
  if (simulated) {
    const b = el('div', 'banner te-simulated');
    b.setAttribute('role', 'note');
    b.append(
      codicon('warning'),
      el('strong', undefined, ' SIMULATED rollout: '),
      el('span', undefined, 'every model answer came from the built-in simulated endpoint, not a real model. Configure a model baseUrl for real runs.'),
    );
    box.append(b);
  }
}

export function isSimulated(rollout: RolloutRecord, spans: readonly SpanRecord[]): boolean {
  if (rollout.simulated) return true;
  for (const s of spans) if (s.attributes[Attr.simulated] === true) return true;
  return false;
}
