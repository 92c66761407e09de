import { changeRetentionHandler } from '../../shared/lambda/change-feed.js';

/**
 * Scheduled (no HTTP route): removes recorded changes older than each tenant's changeRetentionDays,
 * and exactly once's keys past each tenant's idempotencyRetentionHours.
 */
export const handler = changeRetentionHandler();
