import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setTenantRegistry } from '../../shared/config/tenant-registry.js';
import { parseTenantRegistry } from '../../shared/config/tenants.js';
import {
  DatabaseStatementError,
  DatabaseTlsError,
  DatabaseUnavailableError,
  StatementCancelledError,
} from '../../shared/core/database.js';
import { ServiceError } from '../../shared/core/errors.js';
import { WebApiError, WebApiErrorCode } from '../../shared/core/web-api/envelope.js';
import {
  renderWebApiError,
  type WebApiRoute,
  webApiHandler,
  webApiHttpStatus,
} from '../../shared/lambda/web-api/http.js';
import { httpApiEvent, invokeHttp } from '../support/http-api-event.js';

const tenant = (defaultType: string) => ({
  database: { kind: 'embedded', name: 'unused' },
  dataApiUsers: [
    {
      name: 'demo',
      passwordHash: 'scrypt$16384$8$1$ZGVtby10ZW5hbnQtc2FsdA==$x2bp48ourmNi7AJz+st/kNLkTjPJ/XnX7NIpiDrZ8ig=',
    },
  ],
  dataSources: '*',
  webApi: {
    CommandTimeoutAsync: 20,
    RequestMaxSecValidity: 300,
    CheckReplayRequest: true,
    ReplayRequestTime: 300,
    DefContentType: defaultType,
  },
});

beforeAll(() => {
  setTenantRegistry(
    parseTenantRegistry({ tenants: { json: tenant('application/json'), xml: tenant('application/xml') } }),
  );
});
afterAll(() => setTenantRegistry(undefined));

/** Invokes a route that fails with `error` for tenant `tenantId`. */
async function failWith(error: unknown, tenantId = 'json', headers: Record<string, string> = {}) {
  const route: WebApiRoute = async () => {
    throw error;
  };
  const result = await invokeHttp(
    webApiHandler(route),
    httpApiEvent({
      method: 'POST',
      route: '/{tenant}/WebAPI/getData',
      pathParameters: { tenant: tenantId },
      headers,
    }),
  );
  return { status: result.statusCode, type: result.headers?.['content-type'], body: String(result.body) };
}

describe('Function: webApiHandler (error rendering)', () => {
  it('renders a refusal as the contract error body with its status and errorCode as a string', async () => {
    const { status, type, body } = await failWith(new WebApiError('103', 'The signature does not match'));
    expect(status).toBe(401);
    expect(type).toBe('application/json; charset=utf-8');
    expect(JSON.parse(body)).toEqual({
      id: null,
      vlResult: -1,
      data: [{ error: [{ errorCode: '103', errorMessage: 'The signature does not match' }] }],
    });
  });

  it("renders in the tenant's DefContentType when the request names no format", async () => {
    const { type, body } = await failWith(new WebApiError('101', 'Header Content-Type is missing'), 'xml');
    expect(type).toBe('application/xml; charset=utf-8');
    expect(body).toBe(
      '<?xml version="1.0" encoding="UTF-8"?><result><id/><vlResult>-1</vlResult><data><error>' +
        '<errorCode>101</errorCode><errorMessage>Header Content-Type is missing</errorMessage></error></data></result>',
    );
  });

  it('renders per Accept, then per the request Content-Type, before DefContentType', async () => {
    const error = new WebApiError('105', 'replayed');
    expect((await failWith(error, 'xml', { accept: 'application/json' })).type).toMatch(/^application\/json/);
    expect((await failWith(error, 'xml', { 'content-type': 'application/json' })).type).toMatch(
      /^application\/json/,
    );
    expect((await failWith(error, 'json', { 'content-type': 'text/xml' })).type).toMatch(/^text\/xml/);
  });

  it('answers an unknown tenant with 404 in the Web API format (errorCode 112), in XML when asked', async () => {
    const { status, type, body } = await failWith(new Error('never reached'), 'nope', {
      accept: 'application/xml',
    });
    expect(status).toBe(404);
    expect(type).toMatch(/^application\/xml/);
    expect(body).toContain(
      '<errorCode>112</errorCode><errorMessage>Tenant "nope" does not exist</errorMessage>',
    );
  });

  it('answers an unreachable database with 503 and errorCode 150', async () => {
    const { status, body } = await failWith(new DatabaseUnavailableError('ESOCKET 10.0.0.5:1433 login sa'));
    expect(status).toBe(503);
    expect(JSON.parse(body).data[0].error[0]).toEqual({
      errorCode: '150',
      errorMessage: 'The database is not reachable; try again later',
    });
    expect(body).not.toMatch(/10\.0\.0\.5|ESOCKET|login/);
  });

  it('answers an unreachable answer store with 503/150 that names the store, not the database', async () => {
    const { status, body } = await failWith(
      new ServiceError(503, 'storage_unavailable', 'The answer store is not reachable; try again later', {
        cause: new Error('connect ECONNREFUSED 10.0.0.9:443'),
      }),
    );
    expect(status).toBe(503);
    expect(JSON.parse(body).data[0].error[0]).toEqual({
      errorCode: '150',
      errorMessage:
        'The answer is too large to send inline and the answer store is not reachable; try again later',
    });
    expect(body).not.toMatch(/10\.0\.0\.9|ECONNREFUSED/);
  });

  it('names the journal row of a call that was journaled before it failed', async () => {
    const { body } = await failWith(new WebApiError('150', 'later', { journalId: 41 }), 'xml');
    expect(body).toContain('<result><id>41</id><vlResult>-1</vlResult>');
  });

  it('answers a failed TLS handshake with 503 and errorCode 150, saying so', async () => {
    const { status, body } = await failWith(
      new DatabaseTlsError('certificate not trusted (unable to verify the first certificate)', {
        cause: new Error('Failed to connect to 10.0.0.5:1433 - unable to verify the first certificate'),
      }),
    );
    expect(status).toBe(503);
    expect(JSON.parse(body).data[0].error[0]).toEqual({
      errorCode: '150',
      errorMessage:
        'The tenant database refused or failed the TLS handshake: certificate not trusted (unable to verify the first certificate)',
    });
    expect(body).not.toMatch(/10\.0\.0\.5|1433/);
  });

  it('answers anything unexpected with 500 and errorCode 190, without internals', async () => {
    for (const error of [
      new DatabaseStatementError('Invalid object name dbo.WS_JOURNAL', '208'),
      new TypeError("Cannot read properties of undefined (reading 'id')"),
    ]) {
      const { status, body } = await failWith(error);
      expect(status).toBe(500);
      expect(JSON.parse(body).data[0].error[0]).toEqual({
        errorCode: '190',
        errorMessage: 'The request could not be completed',
      });
    }
  });

  it('answers a call cancelled by its time limit 503 with errorCode 162 (a time-out), never 190', async () => {
    const { status, body } = await failWith(new StatementCancelledError('cancelled at the time limit'));
    expect(status).toBe(503);
    expect(JSON.parse(body).data[0].error[0]).toEqual({
      errorCode: '162',
      errorMessage:
        'The request did not finish within the time limit of the gateway; use getDataAsync for long operations',
    });
    const timedOut = new Error('[AbortError]: The operation was aborted.', {
      cause: { package: '@middy/core' },
    });
    timedOut.name = 'TimeoutError';
    expect(renderWebApiError(timedOut, { headers: {} } as never, 'request-2').code).toBe('162');
  });

  it('renders errors raised outside a route from the request headers alone', () => {
    const { response, code } = renderWebApiError(
      new WebApiError('101', 'missing'),
      { headers: { accept: 'text/xml' } } as never,
      'request-1',
    );
    expect(code).toBe('101');
    expect(response.headers).toEqual({
      'content-type': 'text/xml; charset=utf-8',
      'x-request-id': 'request-1',
    });
  });

  it("answers each errorCode with the contract's HTTP status", () => {
    const contract: Record<string, number> = {
      '100': 400,
      '101': 400,
      '102': 401,
      '103': 401,
      '104': 401,
      '105': 409,
      '106': 415,
      '110': 404,
      '111': 404,
      '120': 200,
      '150': 503,
      '160': 200,
      '161': 200,
    };
    for (const [code, status] of Object.entries(contract)) {
      expect([code, webApiHttpStatus(new WebApiError(code as WebApiErrorCode, 'x'))]).toEqual([code, status]);
    }
    expect(webApiHttpStatus(new WebApiError(WebApiErrorCode.internal, 'x'))).toBe(500);
  });

  it("does not take a Data API error's code for a Web API errorCode, even when it looks like one", async () => {
    const { status, body } = await failWith(new ServiceError(409, '105', 'a Data API refusal'));
    expect(status).toBe(500);
    expect(JSON.parse(body).data[0].error[0]).toEqual({
      errorCode: '190',
      errorMessage: 'The request could not be completed',
    });
  });
});
