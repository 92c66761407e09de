import { SERVICE_VERSION } from '../../shared/config/version.js';
import { describeDataApi } from '../../shared/core/data-api/description.js';
import { registerAfterAnswerExtension } from '../../shared/lambda/after-answer.js';
import { tenantBaseUrl } from '../../shared/lambda/caller-auth.js';
import { changeFeedRecording } from '../../shared/lambda/change-feed.js';
import {
  authenticate,
  conditionalAnswer,
  dataApiContext,
  renderDataApiError,
} from '../../shared/lambda/data-api.js';
import { httpHandler } from '../../shared/lambda/http.js';

// During init, as Lambda requires: the tenant's slot goes back after the answer (after-answer.ts).
await registerAfterAnswerExtension();

/** GET /{tenant}/JsonAPI/openapi.json: the Data API as this tenant may call it (CONTRACT 4a). */
export const handler = httpHandler(async function describeTenant(request) {
  const tenant = await authenticate(request);
  const base = request.path.replace(/\/openapi\.json$/, '');
  const document = await describeDataApi(
    await dataApiContext(tenant, request),
    tenant.id,
    base,
    SERVICE_VERSION,
    tenant.changeFeed,
    await changeFeedRecording(tenant, request),
    {
      basic: tenant.dataApiAuth.includes('basic'),
      bearer: tenant.dataApiAuth.includes('bearer'),
      tokenUrl: tenant.oauthClients.length > 0 ? `${tenantBaseUrl(request, tenant)}/oauth2/token` : undefined,
    },
  );
  const body = JSON.stringify(document);
  return conditionalAnswer(
    request,
    { kind: 'inline', body, contentType: 'application/json; charset=utf-8' },
    {},
  );
}, renderDataApiError);
