import { SERVICE_VERSION } from '../../shared/config/version.js';
import { describeDataApi } from '../../shared/core/data-api/description.js';
import { registerAfterAnswerExtension } from '../../shared/lambda/after-answer.js';
import { changeFeedRecording } from '../../shared/lambda/change-feed.js';
import { conditionalAnswer, dataApiContext, dataApiHandler } from '../../shared/lambda/data-api.js';
import { tenantBaseUrl } from '../../shared/lambda/token-issuer.js';

// During init, as Lambda requires: the tenant's slot goes back after the answer (after-answer.ts).
await registerAfterAnswerExtension();

/** GET /{tenant}/JsonAPI/openapi.json: the Data API as this tenant may call it (CONTRACT 4a). */
export const handler = dataApiHandler(async function describeTenant(ctx) {
  const { tenant, request } = ctx;
  const base = request.path.replace(/\/openapi\.json$/, '');
  const document = await describeDataApi(
    await dataApiContext(ctx),
    tenant.id,
    base,
    SERVICE_VERSION,
    tenant.changeFeed,
    await changeFeedRecording(ctx),
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
});
