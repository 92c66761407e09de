import { registerAfterAnswerExtension } from '../../shared/lambda/after-answer.js';
import { authorizationServerHandler } from '../../shared/lambda/authorization-server.js';

// During init, as Lambda requires: the tenant's slot goes back after the answer (after-answer.ts).
await registerAfterAnswerExtension();

/**
 * POST /{tenant}/oauth2/token, GET /{tenant}/.well-known/jwks.json, and the metadata at
 * GET /.well-known/oauth-authorization-server/{tenant} and GET /{tenant}/.well-known/oauth-authorization-server
 */
export const handler = authorizationServerHandler();
