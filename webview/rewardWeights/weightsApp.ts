import type { VscodeButton } from '@vscode-elements/elements/dist/vscode-button/vscode-button.js';
import type { VscodeSingleSelect } from '@vscode-elements/elements/dist/vscode-single-select/vscode-single-select.js';
import type { AirRuleIssue } from '../../src/core/reward/airRules';
import type { WeightsConfig } from '../../src/shared/weightsProtocol';
import type { HostClient } from '../shared/hostClient';
import { fillRunPicker } from '../shared/runPicker';
import { AirSection } from './airSection';
import { CriteriaForm } from './criteriaForm';
import { button, el, section } from './dom';
import { checkCriteria, criteriaForSave, draftFromConfig, isDirty, rulesForHost, type Draft } from './draft';
import { WhatIfView } from './whatIfView';

/*
 * The reward-weight editor: criteria weights with a live what-if over the
 * stored rollouts, AIR rules with validation and a preview, Save (writes
 * lab.json) and the explicit Re-score. Unsaved edits, the scope and the
 * previewed rollout survive a reload through getState/setState.
 */

/** Quiet time after the last keystroke before the host is asked again. */
const DEBOUNCE_MS = 200;
const RECENT_ROLLOUTS = 50;

type Split = 'train' | 'val';

export class WeightsApp {
  private config: WeightsConfig | null = null;
  private saved: Draft = { criteria: [], air: [] };
  private draft: Draft = { criteria: [], air: [] };
  private runId: string | null = null;
  private split: Split | null = null;
  private rolloutId: string | null = null;
  private airErrors = false;
  private busy = false;
  private whatIfSeq = 0;
  private airSeq = 0;
  private whatIfTimer: ReturnType<typeof setTimeout> | undefined;
  private airTimer: ReturnType<typeof setTimeout> | undefined;

  private readonly form: CriteriaForm;
  private readonly whatIf: WhatIfView;
  private readonly air: AirSection;
  private readonly runPicker: VscodeSingleSelect;
  private readonly splitPicker: VscodeSingleSelect;
  private readonly saveButton: VscodeButton;
  private readonly rescoreButton: VscodeButton;
  private readonly resetButton: VscodeButton;
  private readonly status: HTMLElement;
  private readonly rescoreHint: HTMLElement;
  private readonly banner: HTMLElement;
  private readonly counts: HTMLElement;
  private readonly history: HTMLElement;
  private readonly airAnchor: HTMLElement;

  constructor(
    root: HTMLElement,
    private readonly client: HostClient<'rewardWeights'>,
  ) {
    root.classList.add('rw-root');
    const st = client.getState();
    this.runId = st.runId ?? null;
    this.split = st.split ?? null;
    this.rolloutId = st.rolloutId ?? null;

    const toolbar = el('div', 'toolbar rw-toolbar');
    toolbar.setAttribute('role', 'toolbar');
    toolbar.setAttribute('aria-label', 'Reward weights');
    this.runPicker = document.createElement('vscode-single-select');
    this.runPicker.className = 'rw-run';
    this.runPicker.setAttribute('aria-label', 'Rollouts of which run');
    this.runPicker.addEventListener('change', () => {
      const id = this.runPicker.value || null;
      if (id === this.runId) return;
      this.runId = id;
      this.client.setState({ runId: id ?? undefined });
      this.requestWhatIf(true);
    });
    this.splitPicker = document.createElement('vscode-single-select');
    this.splitPicker.className = 'rw-split';
    this.splitPicker.setAttribute('aria-label', 'Rollouts of which split');
    this.splitPicker.options = [
      { label: 'All splits', value: '', description: '', selected: this.split === null, disabled: false },
      { label: 'train', value: 'train', description: '', selected: this.split === 'train', disabled: false },
      { label: 'val', value: 'val', description: '', selected: this.split === 'val', disabled: false },
    ];
    this.splitPicker.value = this.split ?? '';
    this.splitPicker.addEventListener('change', () => {
      const v = this.splitPicker.value;
      const split = v === 'train' || v === 'val' ? v : null;
      if (split === this.split) return;
      this.split = split;
      this.client.setState({ split: split ?? undefined });
      this.requestWhatIf(true);
    });
    this.saveButton = button('Save', 'rw-save', () => void this.save(), { icon: 'save' });
    this.saveButton.title = 'Write the criteria and AIR rules into .rollout-lab/lab.json (comments and formatting are kept)';
    this.rescoreButton = button('Re-score stored rollouts…', 'rw-rescore', () => void this.rescore(), { secondary: true, icon: 'sync' });
    this.resetButton = button('Reset', 'rw-reset', () => this.reset(), { secondary: true, icon: 'discard' });
    this.resetButton.title = 'Discard the edits: back to what lab.json holds';
    const openConfig = button('Open lab.json', 'rw-open-config', () => this.client.command('weights/openConfig', { at: 'criteria' }), { secondary: true, icon: 'go-to-file' });
    const scope = el('span', 'rw-scope');
    scope.append(el('span', 'muted', 'What-if over'), this.runPicker, this.splitPicker);
    // The buttons stay together: on a narrow panel they wrap as one group instead of leaving Save alone on the right.
    const actions = el('span', 'rw-actions');
    actions.append(this.saveButton, this.rescoreButton, this.resetButton, openConfig);
    toolbar.append(scope, el('span', 'rw-spacer'), actions);

    this.status = el('div', 'rw-status');
    this.status.setAttribute('role', 'status');
    this.status.setAttribute('aria-live', 'polite');
    this.rescoreHint = el('div', 'rw-rescore-hint muted');
    this.banner = el('div', 'banner rw-banner');
    this.banner.hidden = true;

    const main = el('div', 'rw-main');
    const criteria = section('criteria', 'Criteria and weights');
    this.counts = el('p', 'rw-counts muted');
    this.form = new CriteriaForm((_rows, structural) => this.onCriteria(structural));
    criteria.root.append(this.counts, this.form.root);

    const whatIf = section('whatif-section', 'What if: the stored rollouts under these weights');
    this.whatIf = new WhatIfView((rolloutId) => this.client.command('trace/open', { rolloutId }));
    whatIf.root.append(this.whatIf.root);

    const air = section('air-section', 'AIR rules');
    this.airAnchor = air.root;
    this.air = new AirSection({
      changed: () => this.onAir(),
      pickRollout: (id) => {
        this.rolloutId = id;
        this.client.setState({ rolloutId: id ?? undefined });
        this.requestAir(true);
      },
      open: (rolloutId) => this.client.command('trace/open', { rolloutId }),
    });
    air.root.append(this.air.root);

    const past = section('history', 'Past re-scores');
    this.history = el('div', 'rw-history-list');
    past.root.append(el('p', 'muted', 'Each re-score keeps the rewards it replaced; the latest one is what the store reports.'), this.history);

    main.append(criteria.root, whatIf.root, air.root, past.root);
    root.append(toolbar, this.banner, this.status, this.rescoreHint, main);
  }

  listen(): void {
    this.client.on('store/changed', () => void this.refresh());
    this.client.on('weights/configChanged', () => void this.reloadConfig());
    this.client.on('air/selectRollout', ({ rolloutId }) => {
      if (rolloutId) {
        this.rolloutId = rolloutId;
        this.client.setState({ rolloutId });
        void this.loadRollouts().then(() => this.requestAir(true));
      }
      this.airAnchor.scrollIntoView({ block: 'start' });
      this.air.focusPicker();
    });
  }

  async start(): Promise<void> {
    try {
      await this.loadConfig();
    } catch (err) {
      this.fail(`Cannot read the lab config: ${(err as Error).message}`);
      document.body.dataset.ready = 'true';
      return;
    }
    // Unsaved edits from before a reload come back.
    const { draft } = this.client.getState();
    if (draft) this.draft = draft;
    this.renderForms();
    await Promise.all([fillRunPicker(this.client, this.runPicker, this.runId), this.loadRollouts(), this.runWhatIf(), this.runAir()]);
    document.body.dataset.ready = 'true';
  }

  private async loadConfig(): Promise<void> {
    this.config = await this.client.request('weights/get', {});
    this.saved = draftFromConfig(this.config.criteria, this.config.air);
    this.draft = structuredClone(this.saved);
    this.air.setKnown(this.config.airTargets);
    this.renderCounts();
    this.renderHistory();
  }

  /** The store changed: new counts, history, rollouts and what-if; the form is left as it is. */
  private async refresh(): Promise<void> {
    try {
      this.config = await this.client.request('weights/get', {});
    } catch (err) {
      this.fail(`Cannot read the lab config: ${(err as Error).message}`);
      return;
    }
    this.renderCounts();
    this.renderHistory();
    this.updateButtons();
    await Promise.all([fillRunPicker(this.client, this.runPicker, this.runId), this.loadRollouts(), this.runWhatIf(), this.runAir()]);
  }

  /** lab.json changed on disk: take it when there are no unsaved edits, else say so. */
  private async reloadConfig(): Promise<void> {
    const dirty = isDirty(this.draft, this.saved);
    let next: WeightsConfig;
    try {
      next = await this.client.request('weights/get', {});
    } catch (err) {
      this.banner.textContent = `lab.json changed and cannot be read now: ${(err as Error).message}`;
      this.banner.hidden = false;
      return;
    }
    this.config = next;
    this.saved = draftFromConfig(next.criteria, next.air);
    this.air.setKnown(next.airTargets);
    this.renderCounts();
    this.renderHistory();
    if (dirty && isDirty(this.draft, this.saved)) {
      this.banner.textContent = 'lab.json changed on disk. Your edits are kept; Reset loads the file.';
      this.banner.hidden = false;
      this.updateButtons();
      return;
    }
    this.banner.hidden = true;
    this.draft = structuredClone(this.saved);
    this.renderForms();
    this.requestWhatIf(true);
    this.requestAir(true);
  }

  private renderForms(): void {
    this.form.render(this.draft.criteria);
    this.air.render(this.draft.air);
    this.form.update(checkCriteria(this.draft.criteria));
    this.updateButtons();
  }

  private renderCounts(): void {
    const c = this.config;
    if (!c) return;
    const parts = [
      `${c.scored} of ${c.rollouts} stored rollouts with a reward have criterion scores to re-weight.`,
      `A judge failure scores every criterion ${c.judgeFailurePenalty}; such rollouts keep their reward here.`,
    ];
    if (c.rewardModule) {
      parts.push(
        c.rewardModule.mode === 'replace'
          ? `Note: the custom reward module ${c.rewardModule.path} makes the final reward; these weights apply only where it calls the judge.`
          : `Note: the custom reward module ${c.rewardModule.path} is combined with the judge; these weights change the judge's part.`,
      );
    }
    this.counts.textContent = parts.join(' ');
  }

  private renderHistory(): void {
    const list = this.config?.rescores ?? [];
    if (!list.length) {
      this.history.replaceChildren(el('p', 'muted', 'None yet.'));
      return;
    }
    const ul = el('ul', 'rw-history');
    for (const r of list) {
      const li = el('li', 'rw-history-item');
      li.dataset.rescore = r.id;
      const weights = Object.entries(r.criteria)
        .map(([k, v]) => `${k} ${v.weight}`)
        .join(', ');
      li.append(
        el('span', 'rw-history-when', new Date(r.at).toLocaleString()),
        el('span', 'rw-history-count', `${r.rollouts} rollouts`),
        el('span', 'rw-history-weights muted', weights),
      );
      if (r.note) li.append(el('span', 'rw-history-note', r.note));
      ul.append(li);
    }
    this.history.replaceChildren(ul);
  }

  private onCriteria(structural: boolean): void {
    this.form.update(checkCriteria(this.draft.criteria));
    this.persist();
    this.updateButtons();
    this.requestWhatIf(structural);
  }

  private onAir(): void {
    this.persist();
    this.updateButtons();
    this.requestAir(false);
  }

  /** Keeps unsaved edits only: a form that matches lab.json reloads from the file, which may change meanwhile. */
  private persist(): void {
    this.client.setState({ draft: isDirty(this.draft, this.saved) ? this.draft : undefined });
  }

  /** Asks for a what-if after the user pauses (or now); a later answer always replaces an earlier one. */
  private requestWhatIf(now: boolean): void {
    clearTimeout(this.whatIfTimer);
    if (now) void this.runWhatIf();
    else this.whatIfTimer = setTimeout(() => void this.runWhatIf(), DEBOUNCE_MS);
  }

  private async runWhatIf(): Promise<void> {
    const seq = ++this.whatIfSeq;
    const check = checkCriteria(this.draft.criteria);
    if (!check.weights) {
      this.whatIf.message('Fix the marked criteria to see how the stored rollouts would score.');
      return;
    }
    try {
      const answer = await this.client.request('weights/whatIf', {
        criteria: check.weights,
        ...(this.runId ? { runId: this.runId } : {}),
        ...(this.split ? { split: this.split } : {}),
      });
      if (seq !== this.whatIfSeq) return;
      this.whatIf.show(answer);
    } catch (err) {
      if (seq === this.whatIfSeq) this.whatIf.message(`Cannot compute the what-if: ${(err as Error).message}`);
    }
  }

  private requestAir(now: boolean): void {
    clearTimeout(this.airTimer);
    if (now) void this.runAir();
    else this.airTimer = setTimeout(() => void this.runAir(), DEBOUNCE_MS);
  }

  /** Validates the rules in the form and, with a rollout picked, previews them on it. */
  private async runAir(): Promise<void> {
    const seq = ++this.airSeq;
    const rules = rulesForHost(this.draft.air);
    try {
      let issues: AirRuleIssue[];
      if (this.rolloutId) {
        const r = await this.client.request('air/preview', { rules, rolloutId: this.rolloutId });
        if (seq !== this.airSeq) return;
        issues = r.issues;
        this.air.showPreview(r);
      } else {
        const r = await this.client.request('air/validate', { rules });
        if (seq !== this.airSeq) return;
        issues = r.issues;
        this.air.previewMessage('Pick a rollout to see the intermediate rewards these rules would give it.');
      }
      this.airErrors = issues.some((i) => i.severity === 'error');
      this.air.showIssues(issues);
    } catch (err) {
      if (seq === this.airSeq) this.air.previewMessage(`Cannot check the rules: ${(err as Error).message}`);
    }
    this.updateButtons();
  }

  private async loadRollouts(): Promise<void> {
    try {
      const { rollouts } = await this.client.request('rollouts/list', { limit: RECENT_ROLLOUTS });
      this.air.setRollouts(rollouts, this.rolloutId);
    } catch {
      this.air.setRollouts([], this.rolloutId);
    }
  }

  /**
   * Save needs a valid form; Re-score needs the form saved: it re-scores under
   * lab.json's weights, so the stored rewards match what new rollouts get.
   */
  private updateButtons(): void {
    const check = checkCriteria(this.draft.criteria);
    const dirty = isDirty(this.draft, this.saved);
    const valid = check.weights !== null && !this.airErrors;
    this.saveButton.disabled = this.busy || !dirty || !valid;
    this.resetButton.disabled = this.busy || !dirty;
    const scored = this.config?.scored ?? 0;
    this.rescoreButton.disabled = this.busy || dirty || !valid || scored === 0;
    let hint: string;
    if (dirty) hint = 'Unsaved edits: Save first. Re-scoring uses the weights saved in lab.json, so stored rewards match what new rollouts get.';
    else if (scored === 0) hint = 'Nothing to re-score: no stored rollout has criterion scores yet.';
    else hint = `Re-score gives the ${scored} stored rollouts with criterion scores their reward under the saved weights; their current rewards stay in the history.`;
    if (!valid && dirty) hint = 'Fix the marked fields to save.';
    this.rescoreHint.textContent = hint;
    this.rescoreButton.title = hint;
    document.body.dataset.dirty = String(dirty);
  }

  private async save(): Promise<void> {
    const check = checkCriteria(this.draft.criteria);
    if (!check.weights) return;
    this.setBusy(true);
    try {
      const r = await this.client.request('weights/save', { criteria: criteriaForSave(this.draft.criteria), air: rulesForHost(this.draft.air) });
      this.saved = draftFromConfig(r.criteria, r.air);
      // The form keeps its row keys (and focus); only the values the file now holds are taken.
      this.status.textContent = `Saved to ${r.file}.`;
      this.status.classList.remove('error');
      this.banner.hidden = true;
      if (this.config) this.config = { ...this.config, criteria: r.criteria, air: r.air };
    } catch (err) {
      this.status.textContent = `Not saved: ${(err as Error).message}`;
      this.status.classList.add('error');
    } finally {
      this.setBusy(false);
      this.persist();
    }
  }

  private async rescore(): Promise<void> {
    const check = checkCriteria(this.saved.criteria);
    if (!check.weights) return;
    this.setBusy(true);
    this.status.classList.remove('error');
    this.status.textContent = 'Waiting for confirmation…';
    try {
      const r = await this.client.request('weights/rescore', {
        expect: check.weights,
        ...(this.runId ? { runId: this.runId } : {}),
        ...(this.split ? { split: this.split } : {}),
      });
      this.status.textContent = r.confirmed
        ? `Re-scored ${r.rescored} rollouts: ${r.changed} rewards changed${r.kept ? `, ${r.kept} kept theirs` : ''}. Earlier rewards are kept in the history.`
        : 'Re-score cancelled.';
    } catch (err) {
      this.status.textContent = `Not re-scored: ${(err as Error).message}`;
      this.status.classList.add('error');
    } finally {
      this.setBusy(false);
    }
  }

  private reset(): void {
    this.draft = structuredClone(this.saved);
    this.banner.hidden = true;
    this.persist();
    this.renderForms();
    this.requestWhatIf(true);
    this.requestAir(true);
    this.status.textContent = 'Edits discarded.';
    this.status.classList.remove('error');
  }

  private setBusy(on: boolean): void {
    this.busy = on;
    this.updateButtons();
  }

  private fail(text: string): void {
    this.status.textContent = text;
    this.status.classList.add('error');
    const open = button('Open lab.json', 'rw-open-config-error', () => this.client.command('weights/openConfig', {}), { secondary: true });
    this.status.append(' ', open);
  }
}
