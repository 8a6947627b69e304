import type { VscodeSingleSelect } from '@vscode-elements/elements/dist/vscode-single-select/vscode-single-select.js';
import type { VscodeTextfield } from '@vscode-elements/elements/dist/vscode-textfield/vscode-textfield.js';
import type { AirRuleIssue } from '../../src/core/reward/airRules';
import type { RolloutRecord } from '../../src/core/store/types';
import type { RequestResults } from '../../src/shared/protocol';
import { activatable, button, el, num } from './dom';
import { tableHead } from '../shared/dom';
import { AIR_EVENTS, newKey, ruleIndexOf, type DraftRule } from './draft';

/*
 * AIR rules as editable rows (name, event, agents, tools, reward) with the
 * host's validation issues shown under the row they concern, and a preview
 * of the intermediate rewards the rules in the form would give on a stored
 * rollout, with totals by rule and by agent.
 */

const EVENT_HELP: Record<(typeof AIR_EVENTS)[number], string> = {
  'tool.ok': 'after a tool call that succeeded',
  'tool.error': 'after a tool call that failed',
  'output.valid': "after an agent's answer parsed",
  'output.invalid': "after an agent's answer failed to parse",
};

interface RuleParts {
  row: HTMLElement;
  name: VscodeTextfield;
  issues: HTMLElement;
}

export interface AirHandlers {
  changed(rules: DraftRule[], structural: boolean): void;
  pickRollout(rolloutId: string | null): void;
  open(rolloutId: string): void;
}

export class AirSection {
  readonly root: HTMLElement;
  private readonly list: HTMLElement;
  private readonly listIssues: HTMLElement;
  private readonly known: HTMLElement;
  private readonly picker: VscodeSingleSelect;
  private readonly previewStatus: HTMLElement;
  private readonly previewHost: HTMLElement;
  private rules: DraftRule[] = [];
  private readonly parts = new Map<string, RuleParts>();

  constructor(private readonly handlers: AirHandlers) {
    this.root = el('div', 'rw-air');
    this.root.append(
      el(
        'p',
        'muted rw-air-intro',
        'Automatic intermediate rewards: each time a rule\'s event happens on a span of a rollout, the rule adds its reward there. Leave agents or tools empty for "all"; separate names with commas.',
      ),
    );
    const head = el('div', 'rw-air-head');
    head.setAttribute('aria-hidden', 'true');
    for (const text of ['Name', 'When', 'Agents', 'Tools', 'Reward', '']) head.append(el('span', undefined, text));
    this.list = el('div', 'rw-air-list');
    this.list.setAttribute('role', 'list');
    this.list.setAttribute('aria-label', 'AIR rules');
    this.listIssues = el('div', 'rw-air-list-issues');
    this.known = el('p', 'rw-known muted');
    const add = button('Add rule', 'rw-add-rule', () => this.add(), { secondary: true, icon: 'add' });

    const preview = el('div', 'rw-air-preview');
    preview.append(el('h3', undefined, 'Preview on a stored rollout'));
    const pickRow = el('div', 'rw-preview-pick');
    const label = el('label', 'rw-field');
    label.append(el('span', undefined, 'Rollout'));
    this.picker = document.createElement('vscode-single-select');
    this.picker.className = 'rw-rollout-picker';
    this.picker.setAttribute('aria-label', 'Rollout to preview the AIR rules on');
    this.picker.addEventListener('change', () => this.handlers.pickRollout(this.picker.value || null));
    label.append(this.picker);
    this.previewStatus = el('span', 'rw-preview-status muted');
    this.previewStatus.setAttribute('role', 'status');
    pickRow.append(label, this.previewStatus);
    this.previewHost = el('div', 'rw-preview-result');
    preview.append(pickRow, this.previewHost);

    this.root.append(head, this.list, this.listIssues, add, this.known, preview);
  }

  setKnown(targets: { agents: string[]; tools: string[] }): void {
    this.known.textContent = `Agents: ${targets.agents.join(', ') || '(none)'}. Tools: ${targets.tools.join(', ') || '(none)'}.`;
  }

  render(rules: DraftRule[]): void {
    this.rules = rules;
    this.parts.clear();
    this.list.replaceChildren(...rules.map((r) => this.buildRow(r)));
    if (!rules.length) this.list.append(el('div', 'muted rw-no-rules', 'No AIR rules: rollouts get only their final reward.'));
  }

  /** Issues under their rows; those about the list as a whole above the Add button. */
  showIssues(issues: readonly AirRuleIssue[]): void {
    const byRow = new Map<number, AirRuleIssue[]>();
    const general: AirRuleIssue[] = [];
    for (const i of issues) {
      const at = ruleIndexOf(i.path);
      if (at === null || at >= this.rules.length) general.push(i);
      else byRow.set(at, [...(byRow.get(at) ?? []), i]);
    }
    this.rules.forEach((r, idx) => {
      const p = this.parts.get(r.key);
      if (!p) return;
      const mine = byRow.get(idx) ?? [];
      p.issues.replaceChildren(...mine.map((i) => issueLine(i)));
      p.issues.hidden = !mine.length;
      p.row.classList.toggle('rw-has-error', mine.some((i) => i.severity === 'error'));
      p.row.classList.toggle('rw-has-warning', mine.some((i) => i.severity === 'warning'));
    });
    this.listIssues.replaceChildren(...general.map((i) => issueLine(i)));
  }

  setRollouts(rollouts: readonly RolloutRecord[], selected: string | null): void {
    const opts = rollouts.map((r) => ({
      label: `${r.taskId} · ${r.status}${r.finalReward === null ? '' : ` · reward ${r.finalReward.toFixed(3)}`}`,
      value: r.id,
      description: `${r.runId} · ${new Date(r.startTime).toLocaleString()}`,
      selected: r.id === selected,
      disabled: false,
    }));
    if (selected && !opts.some((o) => o.value === selected)) {
      opts.unshift({ label: `rollout ${selected.slice(0, 8)}`, value: selected, description: '', selected: true, disabled: false });
    }
    opts.unshift({ label: rollouts.length ? 'Pick a rollout…' : 'No stored rollouts yet', value: '', description: '', selected: !selected, disabled: false });
    this.picker.options = opts;
    this.picker.value = selected ?? '';
  }

  focusPicker(): void {
    this.picker.scrollIntoView({ block: 'center' });
    this.picker.focus();
  }

  previewMessage(text: string): void {
    this.previewStatus.textContent = text;
    this.previewHost.replaceChildren();
  }

  showPreview(r: RequestResults['air/preview']): void {
    const p = r.preview;
    if (!p) {
      this.previewMessage('Fix the errors marked on the rules to see the preview.');
      return;
    }
    this.previewStatus.textContent = `${p.rewards.length} intermediate rewards on ${p.spansChecked} spans of task ${r.rollout.taskId}; total ${signed(p.total)}.`;
    const table = el('table', 'rw-table rw-preview-table');
    table.append(el('caption', 'rw-sr-only', 'Intermediate rewards per span; Enter opens the rollout in the trace explorer'));
    const thead = tableHead(['Span', 'Agent', 'Tool', 'Rule', 'Reward']);
    const body = el('tbody');
    for (const w of p.rewards) {
      const tr = el('tr', w.reward < 0 ? 'rw-negative' : 'rw-positive');
      tr.dataset.span = w.spanId;
      tr.dataset.rule = w.rule;
      tr.append(el('td', undefined, w.spanName), el('td', undefined, w.agent ?? '–'), el('td', undefined, w.tool ?? '–'), el('td', undefined, w.rule), el('td', 'rw-num', signed(w.reward)));
      activatable(tr, () => this.handlers.open(r.rollout.id));
      body.append(tr);
    }
    if (!p.rewards.length) {
      const tr = el('tr');
      const td = el('td', 'muted', 'No rule fires on this rollout.');
      td.colSpan = 5;
      tr.append(td);
      body.append(tr);
    }
    table.append(thead, body);

    const totals = el('div', 'rw-preview-totals');
    totals.append(totalsTable('By rule', 'rw-by-rule', Object.entries(p.byRule).map(([k, v]) => [k, `${v.count} × → ${signed(v.total)}`])));
    totals.append(totalsTable('By agent', 'rw-by-agent', Object.entries(p.byAgent).map(([k, v]) => [k, signed(v)])));
    const sum = el('p', 'rw-preview-total', `Total intermediate reward: ${signed(p.total)}`);
    this.previewHost.replaceChildren(table, totals, sum);
  }

  private add(): void {
    const key = newKey('r');
    this.rules.push({ key, name: '', when: 'tool.ok', agents: '', tools: '', reward: '0.05' });
    this.list.querySelector('.rw-no-rules')?.remove();
    this.list.append(this.buildRow(this.rules[this.rules.length - 1]!));
    this.handlers.changed(this.rules, true);
    this.parts.get(key)?.name.focus();
  }

  private remove(key: string): void {
    const i = this.rules.findIndex((r) => r.key === key);
    if (i < 0) return;
    const next = this.rules[i + 1] ?? this.rules[i - 1];
    this.rules.splice(i, 1);
    this.render(this.rules);
    this.handlers.changed(this.rules, true);
    if (next) this.parts.get(next.key)?.name.focus();
  }

  private buildRow(r: DraftRule): HTMLElement {
    const row = el('div', 'rw-rule');
    row.setAttribute('role', 'listitem');
    row.dataset.key = r.key;
    const changed = (): void => this.handlers.changed(this.rules, false);
    const text = (cls: string, field: 'name' | 'agents' | 'tools' | 'reward', label: string, placeholder: string): VscodeTextfield => {
      const t = document.createElement('vscode-textfield');
      t.className = cls;
      t.value = r[field];
      t.placeholder = placeholder;
      t.setAttribute('aria-label', label);
      t.addEventListener('input', () => {
        r[field] = t.value;
        changed();
      });
      return t;
    };
    const name = text('rw-rule-name', 'name', 'Rule name', 'name');
    const when = document.createElement('vscode-single-select');
    when.className = 'rw-rule-when';
    when.setAttribute('aria-label', 'When the rule fires');
    when.options = AIR_EVENTS.map((e) => ({ label: e, value: e, description: EVENT_HELP[e], selected: e === r.when, disabled: false }));
    if (!(AIR_EVENTS as readonly string[]).includes(r.when)) {
      when.options = [...when.options, { label: r.when, value: r.when, description: 'not an event', selected: true, disabled: false }];
    }
    when.value = r.when;
    when.addEventListener('change', () => {
      r.when = when.value;
      changed();
    });
    const agents = text('rw-rule-agents', 'agents', 'Agents (comma-separated; empty for all)', 'all agents');
    const tools = text('rw-rule-tools', 'tools', 'Tools (comma-separated; empty for all)', 'all tools');
    const reward = text('rw-rule-reward', 'reward', 'Reward, −1 to 1', '0.05');
    reward.type = 'number';
    reward.step = 0.01;
    reward.min = -1;
    reward.max = 1;
    const remove = button('', 'rw-remove-rule', () => this.remove(r.key), { secondary: true, icon: 'trash', label: `Remove rule ${r.name || '(new)'}` });
    remove.title = 'Remove this rule';
    const issues = el('div', 'rw-rule-issues');
    issues.hidden = true;
    row.append(name, when, agents, tools, reward, remove, issues);
    this.parts.set(r.key, { row, name, issues });
    return row;
  }
}

function issueLine(i: AirRuleIssue): HTMLElement {
  const line = el('div', `rw-issue rw-issue-${i.severity}`);
  line.dataset.path = i.path;
  line.append(el('span', 'rw-issue-kind', i.severity === 'error' ? 'Error' : 'Warning'), el('span', 'rw-issue-path', i.path), el('span', 'rw-issue-message', i.message));
  return line;
}

function totalsTable(title: string, cls: string, rows: Array<[string, string]>): HTMLElement {
  const box = el('div', `rw-totals ${cls}`);
  box.append(el('h4', undefined, title));
  const dl = el('dl');
  for (const [k, v] of rows) dl.append(el('dt', undefined, k), el('dd', 'rw-num', v));
  if (!rows.length) dl.append(el('dt', 'muted', 'none'));
  box.append(dl);
  return box;
}

function signed(v: number): string {
  const s = num(v, 3);
  return v > 0 ? `+${s}` : s;
}
