import { webhookAdminHandler } from '../../shared/lambda/webhook-admin.js';

/** Lambda Invoke API only (no HTTP route): resend, recover, enable, status of webhook events. */
export const handler = webhookAdminHandler();
