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

/** response_format modes each endpoint and model rejected with HTTP 400 (and why), so later calls go straight to one that works. */
const rejectedFormats = new Map<string, Map<StructuredOutputMode, string>>();

/**
 * The response_format of one call as it weakens (json_schema → json_object →
 * none) when a server rejects it; what an endpoint rejected once is skipped
 * for the rest of the process.
 */
export class FormatFallback {
  private readonly asked: StructuredOutputMode | null;
  private readonly rejected = new Map<StructuredOutputMode, string>();

  constructor(
    private readonly key: string,
    public body: ChatCompletionCreateParamsNonStreaming,
  ) {
    this.asked = body.response_format ? modeOf(body.response_format) : null;
    const known = rejectedFormats.get(key);
    for (let mode = this.mode(); mode !== null && known?.has(mode); mode = this.mode()) this.weaken(known.get(mode)!);
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
    let known = rejectedFormats.get(this.key);
    if (!known) rejectedFormats.set(this.key, (known = new Map()));
    for (const [mode, reason] of this.rejected) known.set(mode, reason);
  }

  use(): StructuredOutputUse | null {
    if (this.asked === null) return null;
    return { mode: this.mode() ?? 'off', fallback: this.rejected.size ? [...this.rejected.values()].join('; ') : null };
  }

  private mode(): StructuredOutputMode | null {
    return this.body.response_format ? modeOf(this.body.response_format) : null;
  }
}
