/** A request the gateway answers with an error, in OpenAI's error shape. */
export class GatewayError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code: string,
  ) {
    super(message);
    this.name = 'GatewayError';
  }
}

/** OpenAI's error body: what OpenAI clients read the message and code from. */
export function openAIErrorBody(status: number, message: string, code: string | null): { error: { message: string; type: string; code: string | null; param: null } } {
  return { error: { message, type: status >= 500 ? 'server_error' : 'invalid_request_error', code, param: null } };
}
