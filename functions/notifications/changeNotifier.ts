import { changeNotifierHandler } from '../../shared/lambda/change-notifier.js';

/** SQS change-notifications queue: a tenant's notifier pass, or one attempt to deliver an event. */
export const handler = changeNotifierHandler();
