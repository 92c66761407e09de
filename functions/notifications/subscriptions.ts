import { registerAfterAnswerExtension } from '../../shared/lambda/after-answer.js';
import { subscriptionsHandler } from '../../shared/lambda/subscriptions.js';

// During init, as Lambda requires: the tenant's slot goes back after the answer (after-answer.ts).
await registerAfterAnswerExtension();

/** POST|GET /{tenant}/JsonAPI/Subscriptions, GET|DELETE …/{subscriptionId}, POST …/{subscriptionId}/rotate|enable */
export const handler = subscriptionsHandler();
