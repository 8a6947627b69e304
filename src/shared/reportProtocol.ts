import { z } from 'zod';

/**
 * The report panel's part of the message catalogue (src/shared/protocol.ts
 * merges it): request parameter schemas, result types, webview commands,
 * notifications.
 */
export const ReportRequestParams = {} as const satisfies Record<string, z.ZodType>;

// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface ReportRequestResults {}

/** Webview → host commands (fire and forget). */
export const ReportCommandArgs = {} as const satisfies Record<string, z.ZodType>;

// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface ReportNotifications {}
