import { z } from 'zod';

/**
 * The comparison panel's part of the message catalogue (src/shared/protocol.ts
 * merges it): request parameter schemas, result types, webview commands,
 * notifications.
 */
export const ComparisonRequestParams = {} as const satisfies Record<string, z.ZodType>;

// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface ComparisonRequestResults {}

/** Webview → host commands (fire and forget). */
export const ComparisonCommandArgs = {} as const satisfies Record<string, z.ZodType>;

// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface ComparisonNotifications {}
