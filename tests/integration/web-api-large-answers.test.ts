import type { PGlite } from '@electric-sql/pglite';
import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import type { FauxqsServer } from 'fauxqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handler as getData } from '../../functions/web-api/getData.js';
import { startAwsEmulator } from '../../infra/local/aws-emulator.js';
import { registerEmbeddedDatabase } from '../../shared/config/databases.js';
import { resetSettings } from '../../shared/config/settings.js';
import { setTenantRegistry } from '../../shared/config/tenant-registry.js';
import { parseTenantRegistry } from '../../shared/config/tenants.js';
import type { Log, LogFields } from '../../shared/core/log.js';
import type { ServiceMetrics } from '../../shared/core/metrics.js';
import { serviceLog, serviceMetrics, useObservability } from '../../shared/lambda/observability.js';
import { demoDatabase } from '../support/demo.js';
import { invokeHttp } from '../support/http-api-event.js';
import { DEMO_WEB_API, envelope, type SignOptions } from '../support/web-api.js';
import { signedWebApiEvent } from '../support/web-api-event.js';

/**
 * The Web API's answers too large for a Lambda response, with the service's own limits (5 MB
 * inline, 6 MB escaped): the real handler, the embedded database and the S3 emulator.
 */

const BUCKET = 'web-api-large-answers';
const DEMO_PASSWORD_HASH =
  'scrypt$16384$8$1$ZGVtby10ZW5hbnQtc2FsdA==$x2bp48ourmNi7AJz+st/kNLkTjPJ/XnX7NIpiDrZ8ig=';
const MB = 1024 * 1024;
let pg: PGlite;
let emulator: FauxqsServer | undefined;
let previous: { log: Log; metrics: ServiceMetrics };
const requestLines: LogFields[] = [];
const counted: { values: Record<string, number>; dimensions: Record<string, string>[] }[] = [];

beforeAll(async () => {
  ({ emulator } = await startAwsEmulator({
    bucket: BUCKET,
    env: { INLINE_LIMIT_BYTES: String(5 * MB) },
  }));
  const demo = await demoDatabase();
  pg = demo.pg;
  // 9301: 2,400 rows of 1,000 quotes, 4.6 MB of JSON (within 5 MB) but 9.2 MB escaped in a
  // Lambda response; 9302: 60,000 rows, 6.6 MB of JSON, over the inline limit as it is.
  await pg.exec(`
    CREATE FUNCTION dbo."WS_OP_TEST_QUOTES"(p_params jsonb) RETURNS TABLE (id int, t text)
      LANGUAGE sql AS $$ SELECT g, repeat('"', 1000) FROM generate_series(1, 2400) AS g $$;
    CREATE FUNCTION dbo."WS_OP_TEST_MANY"(p_params jsonb) RETURNS TABLE (id int, nazev text)
      LANGUAGE sql AS $$ SELECT g, 'Položka ' || lpad(g::text, 6, '0') || repeat('x', 70) FROM generate_series(1, 60000) AS g $$;
    INSERT INTO dbo."WS_OPERATION" ("VLTYP", "NAZEV", "PROCEDURE_NAME", "ROW_NAME") VALUES
      (9301, 'quotes', 'dbo.WS_OP_TEST_QUOTES', 'Quote'),
      (9302, 'many', 'dbo.WS_OP_TEST_MANY', 'Item');`);
  registerEmbeddedDatabase('web-api-large', demo.db);
  const webApi = {
    CommandTimeoutAsync: 20,
    RequestMaxSecValidity: 300,
    CheckReplayRequest: true,
    ReplayRequestTime: 300,
    DefContentType: 'application/json',
    applications: DEMO_WEB_API.applications,
  };
  setTenantRegistry(
    parseTenantRegistry({
      tenants: {
        demo: {
          database: { kind: 'embedded', name: 'web-api-large' },
          dataApiUsers: [{ name: 'demo', passwordHash: DEMO_PASSWORD_HASH }],
          dataSources: '*',
          webApi,
        },
      },
    }),
  );
  previous = { log: serviceLog(), metrics: serviceMetrics() };
  const none = () => undefined;
  useObservability({
    log: {
      debug: none,
      info: (message, fields = {}) => void (message === 'request' && requestLines.push(fields)),
      warn: none,
      error: none,
    },
    metrics: {
      count: (values, dimensions) =>
        void counted.push({ values: { ...values }, dimensions: [...dimensions] }),
    },
  });
});
afterAll(async () => {
  if (previous) useObservability(previous);
  setTenantRegistry(undefined);
  await pg?.close();
  await emulator?.stop();
});

async function call(body: string, options: SignOptions = {}) {
  return invokeHttp(getData, signedWebApiEvent('getData', body, options));
}

/** What the presigned URL of a 303 serves, and the key it was stored under. */
async function stored(result: APIGatewayProxyStructuredResultV2) {
  const location = String(result.headers?.location);
  const response = await fetch(location);
  expect(response.status).toBe(200);
  return {
    key: decodeURIComponent(new URL(location).pathname.slice(`/${BUCKET}/`.length)),
    type: response.headers.get('content-type'),
    text: await response.text(),
  };
}

async function journalRow(id: number) {
  const { rows } = await pg.query<{ STATE: string; VL_RESULT: number; ANSWER: string; VLTYP: number }>(
    'SELECT "STATE", "VL_RESULT", "ANSWER", "VLTYP" FROM dbo."WS_JOURNAL" WHERE "ID" = $1',
    [id],
  );
  return rows[0]!;
}

/** A Lambda refuses a response over 6 MB, counted as the JSON it is sent as. */
const lambdaResponseBytes = (result: APIGatewayProxyStructuredResultV2) =>
  Buffer.byteLength(JSON.stringify(result));

describe('Web API answers too large for a Lambda response', () => {
  it('an answer under 5 MB that is over 6 MB escaped goes to S3 behind a 303; the journal row is answered', async () => {
    // Act
    const result = await call(envelope(9301));
    // Assess
    expect(result.statusCode).toBe(303);
    expect(lambdaResponseBytes(result)).toBeLessThan(64 * 1024);
    expect(result.headers).toMatchObject({
      location: expect.stringMatching(/X-Amz-Expires=900/),
      'cache-control': 'no-store',
      'x-request-id': 'aws-test-request',
    });
    const { key, type, text } = await stored(result);
    expect(key).toMatch(/^answers\/demo\/web-api\/\d{4}-\d\d-\d\d\/[0-9a-f-]{36}\.json$/);
    expect(type).toBe('application/json; charset=utf-8');
    expect(Buffer.byteLength(text)).toBeLessThan(5 * MB);
    const answer = JSON.parse(text) as { id: number; vlResult: number; data: { id: number; t: string }[] };
    expect(answer.vlResult).toBe(1);
    expect(answer.data).toHaveLength(2400);
    expect(answer.data[2399]).toEqual({ id: 2400, t: '"'.repeat(1000) });
    // Journaled as any answered call, the whole answer in the row: 997 can give it again.
    expect(await journalRow(answer.id)).toEqual({
      STATE: 'finished',
      VL_RESULT: 1,
      VLTYP: 9301,
      ANSWER: text,
    });
  }, 60_000);

  it('an XML answer over 5 MB is stored as XML, and 997 for it answers 303 with the whole original answer', async () => {
    const result = await call('<data><vlTyp>9302</vlTyp></data>', { contentType: 'text/xml' });
    expect(result.statusCode).toBe(303);
    expect(result.headers?.['content-type']).toBe('text/xml; charset=utf-8');
    const xml = await stored(result);
    expect(xml.key).toMatch(/^answers\/demo\/web-api\/.*\.xml$/);
    expect(xml.type).toBe('text/xml; charset=utf-8');
    expect(Buffer.byteLength(xml.text)).toBeGreaterThan(5 * MB);
    expect(xml.text).toMatch(
      /^<\?xml version="1\.0" encoding="UTF-8"\?><result><id>\d+<\/id><vlResult>1<\/vlResult><data><rowItem>/,
    );
    expect(xml.text.match(/<rowItem>/g)).toHaveLength(60000);
    expect(xml.text).toContain('<rowItem><id>60000</id><nazev>Položka 060000');
    const id = Number(/<id>(\d+)<\/id>/.exec(xml.text)![1]);
    const row = await journalRow(id);
    expect([row.STATE, row.VL_RESULT]).toEqual(['finished', 1]);

    const again = await call(envelope(997, [{ idws_journal: id }]));
    expect(again.statusCode).toBe(303);
    const json = JSON.parse((await stored(again)).text) as { id: number; vlResult: number; data: unknown[] };
    expect(json).toEqual({
      id: expect.any(Number),
      vlResult: 1,
      data: [{ resultForId: JSON.parse(row.ANSWER), id }],
    });
    expect((await journalRow(json.id)).STATE).toBe('finished');
  }, 60_000);

  it('keeps a small answer inline', async () => {
    const result = await call(envelope(1001, [{ ico: '25596641' }]));
    expect(result.statusCode).toBe(200);
    expect(result.headers?.location).toBeUndefined();
    expect(JSON.parse(String(result.body)).data).toEqual([
      { id: 1, nazev: 'Alfa Trade s.r.o.', ico: '25596641', mesto: 'Praha' },
    ]);
  });

  it('logs and counts the status it sent: 303, a call with vlResult 1', async () => {
    requestLines.length = 0;
    counted.length = 0;
    expect((await call(envelope(9301))).statusCode).toBe(303);
    expect(requestLines).toEqual([
      expect.objectContaining({ status: 303, route: 'POST /{tenant}/WebAPI/getData' }),
    ]);
    const requests = counted.find(({ values }) => values.Requests === 1)!;
    expect(requests.values.ServerErrors).toBe(0);
    expect(requests.dimensions).toContainEqual({
      route: 'POST /{tenant}/WebAPI/getData',
      statusClass: '3xx',
    });
    expect(counted).toContainEqual({
      values: { WebApiCalls: 1 },
      dimensions: [{ vltyp: '9301', vlResult: '1' }],
    });
  }, 60_000);

  it('answers 503/150 with the journal id when the answer store cannot take the answer; 997 gives it later', async () => {
    // Prepare: a bucket that does not exist
    process.env.LARGE_RESULT_BUCKET = 'no-such-bucket';
    resetSettings();
    let result: APIGatewayProxyStructuredResultV2;
    try {
      // Act
      result = await call(envelope(9301));
    } finally {
      process.env.LARGE_RESULT_BUCKET = BUCKET;
      resetSettings();
    }
    // Assess
    expect(result.statusCode).toBe(503);
    const body = JSON.parse(String(result.body)) as { id: number; data: { error: unknown[] }[] };
    expect(body.data[0]!.error[0]).toEqual({
      errorCode: '150',
      errorMessage:
        'The answer is too large to send inline and the answer store is not reachable; try again later',
    });
    expect(await journalRow(body.id)).toMatchObject({ STATE: 'finished', VL_RESULT: 1, VLTYP: 9301 });
    const later = await call(envelope(997, [{ idws_journal: body.id }]));
    expect(later.statusCode).toBe(303);
    const answer = JSON.parse((await stored(later)).text) as { data: { resultForId: { data: unknown[] } }[] };
    expect(answer.data[0]!.resultForId.data).toHaveLength(2400);
  }, 60_000);
});
