import { createHash } from 'node:crypto';
import type { ChatCompletionCreateParamsNonStreaming } from 'openai/resources/chat/completions';
import type { StructuredOutputMode } from '../config/schema';
import { modeOf, weakerMode } from './responseFormat';

/** How the answer's format was enforced, when the request asked for one. */
export interface StructuredOutputUse {
  /** The mode the answer came back under. */
  mode: StructuredOutputMode;
  /** Why a weaker mode than the one asked for was used (the server's rejection); null when none was needed. */
  fallback: string | null;
}

/**
 * The response_format modes an endpoint and model rejected with HTTP 400, and why, so later calls go straight to one
 * that works. A rejected json_schema is remembered with its schema (llama.cpp may fail to convert one schema and take
 * the next); a rejected json_object is the server's (LM Studio takes none).
 */
const rejectedFormats = new Map<string, string>();

/**
 * The response_format of one call as it weakens (json_schema → json_object →
 * none) when a server rejects it; what an endpoint rejected is skipped for the
 * rest of the process.
 */
export class FormatFallback {
  private readonly asked: StructuredOutputMode | null;
  private readonly rejected = new Map<StructuredOutputMode, string>();
  private readonly schema: string;

  constructor(
    private readonly endpoint: string,
    public body: ChatCompletionCreateParamsNonStreaming,
  ) {
    this.asked = body.response_format ? modeOf(body.response_format) : null;
    const format = body.response_format as { json_schema?: { schema?: unknown } } | undefined;
    this.schema = createHash('sha256').update(JSON.stringify(format?.json_schema?.schema ?? null)).digest('hex').slice(0, 16);
    for (let mode = this.mode(); mode !== null && rejectedFormats.has(this.keyOf(mode)); mode = this.mode()) this.weaken(rejectedFormats.get(this.keyOf(mode))!);
  }

  /** Drops to the next weaker format; `reason` says why the current one is not used. */
  weaken(reason: string): ChatCompletionCreateParamsNonStreaming {
    const { response_format: format, ...rest } = this.body;
    this.rejected.set(modeOf(format), reason);
    // Weaker than a schema is any JSON object, weaker than that is nothing.
    this.body = weakerMode(modeOf(format)) === 'off' ? rest : { ...rest, response_format: { type: 'json_object' } };
    return this.body;
  }

  /** The weaker format worked: the rejected ones are skipped from now on. */
  remember(): void {
    for (const [mode, reason] of this.rejected) rejectedFormats.set(this.keyOf(mode), reason);
  }

  use(): StructuredOutputUse | null {
    if (this.asked === null) return null;
    return { mode: this.mode() ?? 'off', fallback: this.rejected.size ? [...this.rejected.values()].join('; ') : null };
  }

  private keyOf(mode: StructuredOutputMode): string {
    return `${this.endpoint}\u0000${mode}${mode === 'json_schema' ? `\u0000${this.schema}` : ''}`;
  }

  private mode(): StructuredOutputMode | null {
    return this.body.response_format ? modeOf(this.body.response_format) : null;
  }
}
