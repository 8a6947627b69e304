import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { z } from 'zod';
import type { SimulatorConfig } from '../config/schema';
import { jsonLinesRecords } from '../data/datasetRecords';
import { ConfigError, errorMessage } from '../errors';
import { loadUserModule } from '../graph/userModule';
import { readConversation } from './simConversation';
import { conversationFingerprint, messageText, type SimChatRequest } from './simRequest';
import type { SimToolCall } from './simTools';

/** What a canned-answer module is asked: the agent and the conversation, content as plain text. */
export interface CannedRequest {
  /** From the x-rollout-lab-agent header, else the `[agent: X]` marker of the system prompt; null when neither says. */
  agent: string | null;
  messages: Array<{ role: string; content: string; tool_calls?: unknown; tool_call_id?: string }>;
  tools: Array<{ name: string; description?: string; parameters?: Record<string, unknown> }>;
}

export interface CannedReply {
  content: string | null;
  toolCalls: SimToolCall[];
}

export interface CannedAnswers {
  /** Agents with rows of their own; null when every agent may get a canned answer (a module, or a row without "agent"). */
  readonly agents: ReadonlySet<string> | null;
  /** The canned answer, or undefined to leave the request to the generic answer. A broken module throws, naming itself. */
  answer(agent: string | null, request: SimChatRequest): Promise<CannedReply | undefined>;
}

const Arguments = z.union([z.string(), z.record(z.string(), z.unknown())]).default({});
const ToolCallSchema = z.union([
  z.strictObject({ id: z.string().min(1).optional(), name: z.string().min(1), arguments: Arguments }),
  // The OpenAI wire shape, as it would be pasted from a trace.
  z
    .looseObject({ id: z.string().min(1).optional(), type: z.literal('function').optional(), function: z.looseObject({ name: z.string().min(1), arguments: Arguments }) })
    .transform((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments })),
]);
const AnswerSchema = z.union([
  z.string(),
  z
    .strictObject({ content: z.string().nullish(), tool_calls: z.array(ToolCallSchema).optional() })
    .refine((a) => typeof a.content === 'string' || (a.tool_calls?.length ?? 0) > 0, 'give "content" (text) or "tool_calls" ([{ "name", "arguments" }])'),
]);
type Answer = z.output<typeof AnswerSchema>;

/** The agent name the lab's judge calls its model with. */
const JUDGE_AGENT = 'Judge';

const RowSchema = z.strictObject({
  agent: z.string().min(1).optional(),
  match: z.string().min(1).optional(),
  answer: AnswerSchema,
});

interface Row {
  agent: string | undefined;
  matches(text: string): boolean;
  answer: Answer;
  hasToolCalls: boolean;
}

/** "/pattern/flags" is a regular expression; anything else is a substring. */
function matcher(match: string | undefined, where: string, file: string): (text: string) => boolean {
  if (match === undefined) return () => true;
  const re = /^\/(.+)\/([a-z]*)$/s.exec(match);
  if (!re) return (text) => text.includes(match);
  let regex: RegExp;
  try {
    regex = new RegExp(re[1]!, re[2]);
  } catch (err) {
    throw new ConfigError(`${where}: "match" ${match} is not a valid regular expression (${errorMessage(err)}); fix it, or leave out the slashes to match a substring`, file);
  }
  return (text) => regex.test(text);
}

function issueText(error: z.ZodError): string {
  const issue = error.issues[0]!;
  return `${issue.path.join('.') || '(row)'}: ${issue.message}`;
}

/** The reply in the simulator's terms; tool calls without an id get one from the conversation, so replays match. */
function reply(answer: Answer, req: SimChatRequest): CannedReply {
  if (typeof answer === 'string') return { content: answer, toolCalls: [] };
  const seed = createHash('sha256').update(conversationFingerprint(req)).digest('hex');
  const toolCalls = (answer.tool_calls ?? []).map((c, i) => ({
    id: c.id ?? `call_${seed.slice(i * 2, i * 2 + 24)}`,
    name: c.name,
    arguments: typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments),
  }));
  return { content: answer.content ?? null, toolCalls };
}

/**
 * Canned answers from a JSON Lines file, one row per line. A row answers a
 * request when its agent (if given) is the caller and its match (if given)
 * fits the last user message. A row with tool calls answers only until the
 * turn's tool results are in, so an agent is not sent round the same tool loop
 * forever; the next fitting row without tool calls answers after them.
 */
async function cannedAnswersFromFile(file: string): Promise<CannedAnswers> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    const why = (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'does not exist' : `cannot be read: ${errorMessage(err)}`;
    throw new ConfigError(`simulator answers file ${file} ${why} — create it (one {"agent", "match", "answer"} per line) or fix "simulator.answers" in .rollout-lab/lab.json`, file);
  }
  let records;
  try {
    records = jsonLinesRecords(text.replace(/^\uFEFF/, ''), file, file);
  } catch (err) {
    throw new ConfigError(errorMessage(err), file);
  }
  const rows: Row[] = records.map((r) => {
    const where = `${file} line ${r.line}`;
    const parsed = RowSchema.safeParse(r.value);
    if (!parsed.success) {
      throw new ConfigError(`${where}: ${issueText(parsed.error)} — each line is {"agent": "Name", "match": "text or /regex/", "answer": "text" | {"content", "tool_calls"}}`, file);
    }
    const { agent, match, answer } = parsed.data;
    return { agent, matches: matcher(match, where, file), answer, hasToolCalls: typeof answer !== 'string' && (answer.tool_calls?.length ?? 0) > 0 };
  });
  const agents = rows.some((r) => r.agent === undefined) ? null : new Set(rows.map((r) => r.agent!));
  return {
    agents,
    async answer(agent, req) {
      const conv = readConversation(req);
      const toolsDone = conv.toolResults.length > 0;
      // A row without an agent answers the graph's agents, not the lab's own judge (a row naming "Judge" does).
      const row = rows.find((r) => (r.agent === undefined ? agent !== JUDGE_AGENT : r.agent === agent) && !(r.hasToolCalls && toolsDone) && r.matches(conv.lastUser));
      return row ? reply(row.answer, req) : undefined;
    },
  };
}

type AnswerFunction = (request: CannedRequest) => unknown;

/** Canned answers from the user's function: its default export or export "answer". */
export async function cannedAnswersFromModule(file: string): Promise<CannedAnswers> {
  const what = 'simulator answers module';
  if (!existsSync(file)) throw new ConfigError(`${what} ${file} does not exist — create it or fix "simulator.module" in .rollout-lab/lab.json (a path relative to the workspace)`, file);
  const exports = await loadUserModule(file, what);
  const fn = [exports.answer, exports.default].find((v) => typeof v === 'function') as AnswerFunction | undefined;
  if (!fn) {
    throw new ConfigError(
      `${what} ${file} must export a function, as default or "answer": export default function answer({ agent, messages, tools }) { return agent === 'SqlWriter' ? 'SELECT 1' : undefined; } (it exports: ${Object.keys(exports).join(', ') || 'nothing'})`,
      file,
    );
  }
  return {
    agents: null,
    async answer(agent, req) {
      const request: CannedRequest = {
        agent,
        messages: req.messages.map((m) => ({
          role: m.role,
          content: messageText(m),
          ...('tool_calls' in m && m.tool_calls ? { tool_calls: m.tool_calls } : {}),
          ...(m.role === 'tool' ? { tool_call_id: m.tool_call_id } : {}),
        })),
        tools: (req.tools ?? []).map((t) => ({ name: t.function.name, description: t.function.description, parameters: t.function.parameters })),
      };
      let value: unknown;
      try {
        value = await fn(request);
      } catch (err) {
        throw new Error(`${what} ${file} threw for agent ${agent ?? '(unknown)'}: ${errorMessage(err)}`);
      }
      if (value === undefined || value === null) return undefined;
      const parsed = AnswerSchema.safeParse(value);
      if (!parsed.success) {
        throw new Error(`${what} ${file} returned an answer of the wrong shape for agent ${agent ?? '(unknown)'} (${issueText(parsed.error)}); return a string, { content?, tool_calls? } or undefined`);
      }
      return reply(parsed.data, req);
    },
  };
}

/** The module is asked first, then the file; either may pass a request on. */
function firstOf(sources: CannedAnswers[]): CannedAnswers {
  const covered = sources.map((s) => s.agents);
  return {
    agents: covered.includes(null) ? null : new Set(covered.flatMap((s) => [...s!])),
    async answer(agent, req) {
      for (const s of sources) {
        const r = await s.answer(agent, req);
        if (r) return r;
      }
      return undefined;
    },
  };
}

/**
 * Loads `simulator.module` and `simulator.answers` (paths relative to the
 * workspace); null when lab.json gives neither. `loadModule` loads the module
 * (the lab runs it in a worker thread of its own); in-process by default.
 */
export async function loadCannedAnswers(
  workspaceDir: string,
  config: Pick<SimulatorConfig, 'answers' | 'module'> | undefined,
  loadModule: (file: string) => Promise<CannedAnswers> = cannedAnswersFromModule,
): Promise<CannedAnswers | null> {
  const sources: CannedAnswers[] = [];
  if (config?.module) sources.push(await loadModule(resolve(workspaceDir, config.module)));
  if (config?.answers) sources.push(await cannedAnswersFromFile(resolve(workspaceDir, config.answers)));
  return sources.length ? firstOf(sources) : null;
}
