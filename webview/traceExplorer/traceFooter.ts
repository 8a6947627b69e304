import { clear, el } from './dom';
import { formatInt, formatMs } from './format';
import type { TraceTotals } from './traceTotals';

/** Totals over the whole rollout; each figure carries its raw value in data-value for tools and tests. */
export function renderFooter(box: HTMLElement, t: TraceTotals): void {
  clear(box);
  const item = (key: keyof TraceTotals, label: string, text: string, className = ''): void => {
    const s = el('span', `te-total${className ? ' ' + className : ''}`);
    s.dataset.total = key;
    s.dataset.value = String(t[key]);
    s.append(el('span', 'te-total-value', text), el('span', 'te-muted', ` ${label}`));
    box.append(s);
  };
  item('spans', 'spans', formatInt(t.spans));
  item('modelCalls', t.modelCalls === 1 ? 'model call' : 'model calls', formatInt(t.modelCalls));
  item('toolCalls', t.toolCalls === 1 ? 'tool call' : 'tool calls', formatInt(t.toolCalls));
  item('errors', t.errors === 1 ? 'error' : 'errors', formatInt(t.errors), t.errors ? 'te-has-errors' : '');
  item('inputTokens', 'tokens in', formatInt(t.inputTokens));
  item('outputTokens', 'tokens out', formatInt(t.outputTokens));
  item('durationMs', 'total latency', formatMs(t.durationMs));
  item('modelTimeMs', 'in model calls', formatMs(t.modelTimeMs));
}
