import { Attr, type AttributeValue, type SpanRecord } from '../../src/core/trace/span';
import { parseChatMessages } from './chatMessages';
import { renderConversation, type ConversationLinks } from './conversationView';
import { clear, codicon, el, fact, textBlock } from './dom';
import { formatInt, formatMs, formatNumber, formatScore, prettyJson, valueText } from './format';
import { summarizeLogprobs } from './logprobSummary';
import { parseRewardBreakdown, rewardLook } from './rewardBreakdown';
import type { TraceModel } from './traceModel';
import { KIND_ICON } from './treeView';

export interface DetailsLinks extends ConversationLinks {
  openPrompt(agent: string): void;
}

function str(v: AttributeValue | undefined): string | null {
  if (v === undefined || v === null) return null;
  if (typeof v === 'number') return formatNumber(v);
  return Array.isArray(v) ? (v as Array<string | number | boolean>).map((x) => (typeof x === 'number' ? formatNumber(x) : String(x))).join(', ') : String(v);
}

function num(v: AttributeValue | undefined): number | null {
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}

function section(title: string, className = ''): HTMLElement {
  const s = el('section', `te-section${className ? ' ' + className : ''}`);
  s.append(el('h3', undefined, title));
  return s;
}

function facts(rows: Array<[string, string | null | undefined]>): HTMLElement {
  const dl = el('dl', 'te-facts');
  for (const [k, v] of rows) if (v !== null && v !== undefined && v !== '') fact(dl, k, v);
  return dl;
}

/**
 * Everything about one span: what it is, its timing and errors, and by kind
 * the conversation of a model call, the arguments and result of a tool, the
 * criteria of a reward, the output and prompt of a node; then every raw
 * attribute. Rebuilt on each selection; all span text goes in as text.
 */
export function renderDetails(box: HTMLElement, m: TraceModel, i: number, links: DetailsLinks): void {
  clear(box);
  const s = m.spans[i];
  if (!s) {
    box.append(el('div', 'te-empty', 'Select a span to see its details.'));
    return;
  }
  box.dataset.spanId = s.spanId;
  box.dataset.kind = s.kind;
  const a = s.attributes;

  const head = el('div', 'te-details-head');
  const title = el('h2', 'te-details-title');
  const look = rewardLook(s);
  title.append(codicon(look?.icon ?? KIND_ICON[s.kind] ?? 'circle-small', `te-kind-icon te-kind-${s.kind}${look ? ` ${look.cls}` : ''}`), el('span', undefined, s.name));
  const badge = document.createElement('vscode-badge');
  badge.textContent = look && look.label !== 'reward' ? `${s.kind} · ${look.label}` : s.kind;
  title.append(badge);
  head.append(title);
  const dur = Math.max(0, s.endTime - s.startTime);
  head.append(el('div', 'te-muted', `starts at +${formatMs(s.startTime - m.t0)} · lasts ${formatMs(dur)} · ${s.status} · span ${s.spanId}`));
  box.append(head);

  const errorType = str(a[Attr.errorType]);
  if (s.status === 'error' || errorType || s.statusMessage) {
    const err = el('div', 'te-error-box');
    err.setAttribute('role', 'alert');
    const h = el('div', 'te-error-head');
    // The type only when it says more than "Error", and the message without a repeat of it.
    const type = errorType && !/^error$/i.test(errorType) ? errorType : null;
    h.append(codicon('error'), el('strong', undefined, s.status === 'error' || errorType ? 'Error' : 'Status'));
    if (type) h.append(el('span', undefined, '·'), el('code', 'te-error-type', type));
    err.append(h);
    const message = s.statusMessage?.replace(new RegExp(`^(${escapeRegExp(errorType ?? 'Error')}|Error):\\s*`), '');
    if (message && message !== type) err.append(textBlock(message, 'te-pre'));
    box.append(err);
  }

  switch (s.kind) {
    case 'llm':
      renderLlm(box, s, links);
      break;
    case 'tool':
      renderTool(box, s);
      break;
    case 'reward':
      renderReward(box, s);
      break;
    case 'node':
      renderNode(box, s, links);
      break;
    case 'rollout':
      renderRollout(box, s);
      break;
  }
  box.append(renderAttributes(s));
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function renderLlm(box: HTMLElement, s: SpanRecord, links: DetailsLinks): void {
  const a = s.attributes;
  const inTok = num(a[Attr.inputTokens]);
  const outTok = num(a[Attr.outputTokens]);
  const latency = num(a[Attr.latencyMs]) ?? Math.max(0, s.endTime - s.startTime);
  const logical = str(a[Attr.logicalModel]);
  const version = str(a[Attr.modelVersion]);
  const sec = section('Model call');
  sec.append(
    facts([
      ['Agent', str(a[Attr.agentName])],
      ['Model', str(a[Attr.responseModel]) ?? str(a[Attr.requestModel])],
      ['Logical model', logical ? (version ? `${logical} (${version})` : logical) : null],
      ['Provider', str(a[Attr.providerName])],
      ['Server', str(a[Attr.serverAddress])],
      ['Temperature', str(a[Attr.requestTemperature])],
      ['Tokens', inTok !== null || outTok !== null ? `${formatInt(inTok ?? 0)} in · ${formatInt(outTok ?? 0)} out` : null],
      ['Latency', formatMs(latency)],
      ['Finish', str(a[Attr.finishReasons])],
      ['Retries', str(a[Attr.retries])],
      ['Prompt version', str(a[Attr.promptVersion])],
      ['Simulated', a[Attr.simulated] === true ? 'yes — the built-in simulated endpoint answered' : null],
    ]),
  );
  const offered = toolNames(a['gen_ai.request.tools']);
  if (offered.length) sec.append(facts([['Tools offered', offered.join(', ')]]));
  box.append(sec);

  const lp = summarizeLogprobs(a[Attr.logprobs], a[Attr.logprobTokens]);
  if (lp) {
    const lps = section('Logprobs', 'te-logprobs');
    lps.append(
      facts([
        ['Tokens', formatInt(lp.tokens)],
        ['Mean', lp.mean.toFixed(4)],
        ['Min', lp.min.toFixed(4)],
        ['Perplexity', lp.perplexity.toFixed(3)],
        ['Least likely', lp.lowest.length ? lp.lowest.map((t) => `${JSON.stringify(t.token)} ${t.logprob.toFixed(2)}`).join(' · ') : null],
      ]),
    );
    box.append(lps);
  }

  const input = parseChatMessages(a[Attr.inputMessages]);
  const output = parseChatMessages(a[Attr.outputMessages]);
  const conv = section('Conversation');
  if (input || output) conv.append(renderConversation(input, output, links));
  else conv.append(el('div', 'te-muted', 'This call recorded no messages.'));
  box.append(conv);
}

function toolNames(v: AttributeValue | undefined): string[] {
  if (typeof v !== 'string') return [];
  try {
    const list = JSON.parse(v) as unknown;
    if (!Array.isArray(list)) return [];
    return list
      .map((t) => (t && typeof t === 'object' ? ((t as { function?: { name?: unknown } }).function?.name ?? (t as { name?: unknown }).name) : null))
      .filter((n): n is string => typeof n === 'string');
  } catch {
    return [];
  }
}

function renderTool(box: HTMLElement, s: SpanRecord): void {
  const a = s.attributes;
  const sec = section('Tool call');
  sec.append(
    facts([
      ['Tool', str(a[Attr.toolName])],
      ['Agent', str(a[Attr.agentName])],
      ['Call id', str(a[Attr.toolCallId])],
      ['Outcome', s.status === 'error' ? 'error' : 'ok'],
      ['Latency', formatMs(Math.max(0, s.endTime - s.startTime))],
    ]),
  );
  const args = str(a[Attr.toolArguments]);
  if (args !== null) sec.append(el('div', 'te-sub', 'Arguments'), textBlock(prettyJson(args), 'te-pre te-tool-args'));
  const result = str(a[Attr.toolResult]);
  if (result !== null) sec.append(el('div', 'te-sub', 'Result'), textBlock(prettyJson(result), 'te-pre te-tool-result'));
  box.append(sec);
}

function renderReward(box: HTMLElement, s: SpanRecord): void {
  const a = s.attributes;
  const value = num(a[Attr.rewardValue]);
  const sec = section('Reward', 'te-reward');
  sec.append(
    facts([
      ['Name', str(a[Attr.rewardName])],
      ['Kind', str(a[Attr.rewardKind])],
      ['Value', value === null ? null : `${formatScore(value)}${value < 0 ? ' (penalty)' : ''}`],
      ['Rule', str(a['rollout_lab.reward.rule'])],
      ['Agent', str(a[Attr.agentName])],
      ['Judge failed', a['rollout_lab.judge.failed'] === true ? 'yes — the reward fell back to its default' : null],
    ]),
  );
  const rows = parseRewardBreakdown(a[Attr.rewardBreakdown]);
  if (rows?.length) {
    const weighted = rows.some((r) => r.weight !== null);
    const table = el('table', 'te-breakdown');
    table.setAttribute('aria-label', 'Reward breakdown');
    const hr = el('tr');
    for (const h of ['Criterion', 'Score', ...(weighted ? ['Weight', 'Contribution'] : [])]) hr.append(el('th', undefined, h));
    table.append(el('thead'), el('tbody'));
    table.tHead!.append(hr);
    for (const r of rows) {
      const tr = el('tr', 'te-criterion');
      tr.dataset.criterion = r.criterion;
      tr.append(el('td', undefined, r.criterion));
      const score = el('td', 'te-num');
      const meter = el('span', 'te-meter');
      const fill = el('span', 'te-meter-fill');
      fill.style.width = `${Math.max(0, Math.min(1, r.score)) * 100}%`;
      meter.append(fill);
      score.append(meter, el('span', undefined, formatScore(r.score, 2)));
      tr.append(score);
      if (weighted) tr.append(el('td', 'te-num', formatScore(r.weight, 2)), el('td', 'te-num', formatScore(r.contribution)));
      table.tBodies[0]!.append(tr);
    }
    if (value !== null) {
      const tf = el('tr', 'te-final');
      tf.append(el('td', undefined, 'Final value'), el('td', 'te-num', formatScore(value)));
      if (weighted) tf.append(el('td'), el('td', 'te-num', formatScore(rows.reduce((t, r) => t + (r.contribution ?? 0), 0))));
      const foot = table.createTFoot();
      foot.append(tf);
    }
    sec.append(table);
  }
  const rationale = str(a[Attr.judgeRationale]);
  if (rationale) sec.append(el('div', 'te-sub', 'Judge rationale'), textBlock(rationale));
  box.append(sec);
}

function renderNode(box: HTMLElement, s: SpanRecord, links: DetailsLinks): void {
  const a = s.attributes;
  const agent = str(a[Attr.agentName]);
  const sec = section('Graph node');
  sec.append(
    facts([
      ['Node', str(a[Attr.nodeName]) ?? s.name],
      ['Agent', agent],
      ['Step', str(a[Attr.nodeStep])],
      ['Turn', str(a[Attr.turn])],
      ['Model', str(a[Attr.logicalModel])],
      ['Prompt version', str(a[Attr.promptVersion])],
    ]),
  );
  if (agent) {
    const open = document.createElement('vscode-button');
    open.className = 'te-open-prompt';
    open.textContent = `Open ${agent} prompt`;
    open.setAttribute('secondary', '');
    open.addEventListener('click', () => links.openPrompt(agent));
    sec.append(open);
  }
  box.append(sec);
  const output = str(a[Attr.output]);
  if (output !== null) {
    const out = section('Output');
    if (a[Attr.outputOk] === false) out.append(el('div', 'te-warn', 'The answer did not match the expected format.'));
    else if (a[Attr.outputRepaired] === true) out.append(el('div', 'te-muted', 'The answer was repaired to parse as JSON.'));
    const perr = str(a[Attr.parseError]);
    if (perr) out.append(textBlock(perr, 'te-pre te-error-text'));
    out.append(textBlock(prettyJson(output)));
    box.append(out);
  }
}

function renderRollout(box: HTMLElement, s: SpanRecord): void {
  const a = s.attributes;
  const sec = section('Rollout');
  sec.append(
    facts([
      ['Task', str(a[Attr.taskId])],
      ['Split', str(a[Attr.split])],
      ['Sample', str(a[Attr.sample])],
      ['Decision', str(a[Attr.decision])],
      ['Expected', str(a[Attr.expectedDecision])],
      ['Reward', a[Attr.rewardValue] !== undefined ? formatScore(num(a[Attr.rewardValue])) : null],
      ['Turns', str(a[Attr.turn])],
      ['Run', str(a[Attr.runId])],
    ]),
  );
  const goal = str(a[Attr.taskGoal]);
  if (goal) sec.append(el('div', 'te-sub', 'Goal'), textBlock(goal));
  box.append(sec);
}

function renderAttributes(s: SpanRecord): HTMLElement {
  const keys = Object.keys(s.attributes).sort();
  const det = el('details', 'te-raw');
  // Model calls carry whole conversations; their raw table stays closed until asked for.
  det.open = s.kind !== 'llm';
  det.append(el('summary', undefined, `Attributes (${keys.length})`));
  const table = el('table', 'te-attrs');
  const body = el('tbody');
  for (const k of keys) {
    const tr = el('tr');
    const text = valueText(s.attributes[k]!);
    const td = el('td', 'te-attr-value');
    td.append(textBlock(text.length > 2000 ? text : prettyJson(text), 'te-pre'));
    const th = el('th', 'te-attr-key');
    th.scope = 'row';
    th.append(...breakableKey(k));
    tr.append(th, td);
    body.append(tr);
  }
  table.append(body);
  det.append(table);
  return det;
}

/** An attribute key as text with break opportunities (<wbr>) after its dots and underscores only, never inside a word. */
export function breakableKey(key: string): Node[] {
  const out: Node[] = [];
  for (const part of key.split(/(?<=[._])/)) {
    if (out.length) out.push(document.createElement('wbr'));
    out.push(document.createTextNode(part));
  }
  return out;
}
