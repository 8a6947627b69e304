import { z } from 'zod';

/**
 * The weights panel's part of the message catalogue (src/shared/protocol.ts
 * merges it): request parameter schemas, result types, webview commands,
 * notifications.
 */
export const WeightsRequestParams = {} as const satisfies Record<string, z.ZodType>;

// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface WeightsRequestResults {}

/** Webview → host commands (fire and forget). */
export const WeightsCommandArgs = {} as const satisfies Record<string, z.ZodType>;

// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface WeightsNotifications {}
