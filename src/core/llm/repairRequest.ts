import { z } from 'zod';
import { shorterAnswerRequest, type MaxTokensCut } from './maxTokensCut';

/**
 * The keys a repair request names. Answer schemas are zod objects; others
 * (user-supplied) just get the error text.
 */
function requiredKeys(schema: z.ZodType | null): string[] {
  return schema instanceof z.ZodObject ? Object.keys(schema.shape) : [];
}

/**
 * The message that asks a model to correct an answer that could not be used:
 * what was wrong, the keys it must have and, when the answer was cut off at
 * max_tokens, to answer shorter.
 */
export function repairRequest(problem: string, schema: z.ZodType | null, cut: MaxTokensCut | null = null): string {
  const keys = requiredKeys(schema);
  const keyLine = keys.length ? `It must be one JSON object with the keys: ${keys.map((k) => `"${k}"`).join(', ')}.` : '';
  return [
    'Your previous answer could not be used:',
    problem,
    cut ? shorterAnswerRequest(cut) : '',
    keyLine,
    'Reply again with only the corrected JSON object: no prose, no Markdown, no tool calls.',
  ]
    .filter(Boolean)
    .join('\n');
}
