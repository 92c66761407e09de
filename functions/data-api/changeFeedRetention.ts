import { changeRetentionHandler } from '../../shared/lambda/change-feed.js';

/** Scheduled (no HTTP route): removes recorded changes older than each tenant's changeRetentionDays. */
export const handler = changeRetentionHandler();
