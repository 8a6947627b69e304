import { Attr, type SpanKind } from '../trace/span';

/** OpenInference's span kind attribute: Phoenix files a span under LLM, TOOL, AGENT, CHAIN, EVALUATOR… by it. */
export const OI_SPAN_KIND = 'openinference.span.kind';
/** OpenInference's span input: what a tool span's panel shows as its input. */
export const OI_INPUT_VALUE = 'input.value';

/**
 * The OpenInference attributes an exported span carries beside its GenAI
 * ones, for the viewers that file spans by OpenInference's kinds (Phoenix):
 * the GenAI conventions have no kind for a graph's run, its inner nodes or a
 * reward, and no tool input Phoenix shows. A node of one of the lab's agents
 * is an AGENT, a node inside one (a prebuilt agent's, a subgraph's) and the
 * rollout a CHAIN, a reward an EVALUATOR; a tool's input is its arguments.
 * `get` reads the span's own attributes. The receiver drops these again on
 * the lab's own spans (where they equal what this derives), so a round trip
 * through `collect` adds nothing.
 */
export function openInferenceExportAttrs(kind: SpanKind, get: (key: string) => unknown): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  const oiKind =
    kind === 'llm' ? 'LLM'
    : kind === 'tool' ? 'TOOL'
    : kind === 'reward' ? 'EVALUATOR'
    : kind === 'node' && get(Attr.agentName) !== undefined && get(Attr.innerNode) === undefined ? 'AGENT'
    : 'CHAIN';
  out.push([OI_SPAN_KIND, oiKind]);
  const args = get(Attr.toolArguments);
  if (kind === 'tool' && typeof args === 'string') out.push([OI_INPUT_VALUE, args]);
  return out;
}
