import type { VscodeTextfield } from '@vscode-elements/elements/dist/vscode-textfield/vscode-textfield.js';
import { button, el } from './dom';
import { newKey, parseWeight, weightText, type CriteriaCheck, type DraftCriterion } from './draft';

/*
 * One row per criterion: name, description, weight (a number field and a
 * slider kept in step) and its normalised share of the reward. Rows are built
 * once per structural change (add, remove, reset), not per keystroke, so the
 * field being typed in keeps its focus.
 */

interface RowParts {
  row: HTMLElement;
  name: VscodeTextfield;
  weight: VscodeTextfield;
  slider: HTMLInputElement;
  share: HTMLElement;
  meter: HTMLElement;
  problem: HTMLElement;
}

/** The slider's top end: weights are relative, so 0..1 covers the usual range; the number field takes any larger value. */
const SLIDER_MAX = 1;

export class CriteriaForm {
  readonly root: HTMLElement;
  private readonly list: HTMLElement;
  private readonly formProblem: HTMLElement;
  private readonly sumLine: HTMLElement;
  private rows: DraftCriterion[] = [];
  private readonly parts = new Map<string, RowParts>();

  constructor(private readonly onChange: (rows: DraftCriterion[], structural: boolean) => void) {
    this.root = el('div', 'rw-criteria');
    const head = el('div', 'rw-criteria-head');
    head.setAttribute('aria-hidden', 'true');
    for (const [cls, text] of [
      ['rw-col-name', 'Criterion'],
      ['rw-col-description', 'What the judge scores'],
      ['rw-col-weight', 'Weight'],
      ['rw-col-share', 'Share'],
      ['rw-col-actions', ''],
    ] as const) {
      head.append(el('span', cls, text));
    }
    this.list = el('div', 'rw-criteria-list');
    this.list.setAttribute('role', 'list');
    this.list.setAttribute('aria-label', 'Criteria');
    const foot = el('div', 'rw-criteria-foot');
    const add = button('Add criterion', 'rw-add-criterion', () => this.add(), { secondary: true, icon: 'add' });
    this.sumLine = el('span', 'rw-sum muted');
    foot.append(add, this.sumLine);
    this.formProblem = el('div', 'rw-form-problem error');
    this.formProblem.setAttribute('role', 'alert');
    this.root.append(head, this.list, this.formProblem, foot);
  }

  /** Builds the rows for these criteria (the array is edited in place as the user types). */
  render(rows: DraftCriterion[]): void {
    this.rows = rows;
    this.parts.clear();
    this.list.replaceChildren(...rows.map((r) => this.buildRow(r)));
  }

  /** Shows problems next to their rows and each criterion's share of the weight sum. */
  update(check: CriteriaCheck): void {
    for (const r of this.rows) {
      const p = this.parts.get(r.key);
      if (!p) continue;
      const problem = check.problems.get(r.key) ?? '';
      p.problem.textContent = problem;
      p.problem.hidden = !problem;
      p.row.classList.toggle('rw-invalid', !!problem);
      const w = parseWeight(r.weight);
      p.weight.invalid = w === null;
      const share = w !== null && check.sum > 0 ? w / check.sum : null;
      p.share.textContent = share === null ? '–' : `${(share * 100).toFixed(1)} %`;
      p.meter.style.width = `${share === null ? 0 : Math.round(share * 100)}%`;
    }
    const whole = check.problems.get('') ?? '';
    this.formProblem.textContent = whole;
    this.formProblem.hidden = !whole;
    this.sumLine.textContent = `Weights sum to ${weightText(check.sum)}; each criterion's share of the final reward is its weight over that sum.`;
  }

  focusRow(key: string): void {
    this.parts.get(key)?.name.focus();
  }

  private add(): void {
    const key = newKey('n');
    this.rows.push({ key, name: '', description: '', weight: '0.1' });
    this.list.append(this.buildRow(this.rows[this.rows.length - 1]!));
    this.onChange(this.rows, true);
    this.focusRow(key);
  }

  private remove(key: string): void {
    const i = this.rows.findIndex((r) => r.key === key);
    if (i < 0) return;
    const next = this.rows[i + 1] ?? this.rows[i - 1];
    this.rows.splice(i, 1);
    this.parts.get(key)?.row.remove();
    this.parts.delete(key);
    this.onChange(this.rows, true);
    if (next) this.focusRow(next.key);
  }

  private buildRow(r: DraftCriterion): HTMLElement {
    const row = el('div', 'rw-criterion');
    row.setAttribute('role', 'listitem');
    row.dataset.key = r.key;
    const changed = (): void => this.onChange(this.rows, false);

    const name = document.createElement('vscode-textfield');
    name.className = 'rw-name';
    name.value = r.name;
    name.placeholder = 'name';
    name.setAttribute('aria-label', 'Criterion name');
    name.addEventListener('input', () => {
      r.name = name.value;
      row.dataset.name = r.name.trim();
      changed();
    });
    row.dataset.name = r.name.trim();

    const description = document.createElement('vscode-textfield');
    description.className = 'rw-description';
    description.value = r.description;
    description.placeholder = 'what the judge scores under it';
    description.setAttribute('aria-label', `Description of ${r.name || 'the new criterion'}`);
    description.addEventListener('input', () => {
      r.description = description.value;
      changed();
    });

    const weightBox = el('div', 'rw-weight-box');
    const weight = document.createElement('vscode-textfield');
    weight.className = 'rw-weight';
    weight.type = 'number';
    weight.min = 0;
    // The slider's step: weights with two decimals are what the slider makes and what the defaults use; a
    // coarser step made the field's native validity (and its error colours) reject valid weights such as 0.01.
    weight.step = 0.01;
    weight.value = r.weight;
    weight.setAttribute('aria-label', `Weight of ${r.name || 'the new criterion'}`);
    const slider = el('input', 'rw-slider');
    slider.type = 'range';
    slider.min = '0';
    slider.max = String(SLIDER_MAX);
    slider.step = '0.01';
    slider.setAttribute('aria-label', `Weight of ${r.name || 'the new criterion'} (slider)`);
    const syncSlider = (): void => {
      const w = parseWeight(r.weight);
      slider.value = String(Math.min(SLIDER_MAX, w ?? 0));
    };
    syncSlider();
    weight.addEventListener('input', () => {
      r.weight = weight.value;
      syncSlider();
      changed();
    });
    slider.addEventListener('input', () => {
      r.weight = weightText(Number(slider.value));
      weight.value = r.weight;
      changed();
    });
    weightBox.append(weight, slider);

    const shareBox = el('div', 'rw-share-box');
    const share = el('span', 'rw-share');
    const track = el('span', 'rw-meter');
    track.setAttribute('aria-hidden', 'true');
    const meter = el('span', 'rw-meter-fill');
    track.append(meter);
    shareBox.append(share, track);

    const remove = button('', 'rw-remove', () => this.remove(r.key), { secondary: true, icon: 'trash', label: `Remove criterion ${r.name || '(new)'}` });
    remove.title = 'Remove this criterion';

    const problem = el('div', 'rw-problem error');
    problem.hidden = true;
    problem.id = `rw-problem-${r.key}`;
    row.append(name, description, weightBox, shareBox, remove, problem);
    this.parts.set(r.key, { row, name, weight, slider, share, meter, problem });
    return row;
  }
}
