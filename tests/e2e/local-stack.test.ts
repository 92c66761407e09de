import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lambdaRoutes } from '../../infra/local/routes.js';
import { LARGE_ANSWER_BUCKET, type LocalStack, startLocalStack } from '../../infra/local/stack.js';
import { DEMO_AUTH } from '../support/demo.js';
import { rawRequest, requestLine } from '../support/raw-http.js';

// Well below a read of the 100,000 DOKUMENT rows (2.5-3 s on a quiet machine since the answer
// writer got faster; with 3 s the read could end in time and leave its answer in the bucket).
const GATEWAY_TIMEOUT_MS = 1500;
const ANSWER_MAX_AGE_MS = 1500;

let stack: LocalStack;

/** The Data API reads' cursors open in the embedded database right now. */
async function openReadCursors(): Promise<number> {
  const result = await stack.pglite!.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM pg_cursors WHERE name LIKE 'svc_cursor%'",
  );
  return result.rows[0]!.n;
}
beforeAll(async () => {
  // The gateway's own behaviour; the time-limit test looks at the embedded database's cursors.
  stack = await startLocalStack({
    port: 0,
    database: 'embedded',
    env: {
      LOCAL_GATEWAY_TIMEOUT_MS: String(GATEWAY_TIMEOUT_MS),
      LOCAL_ANSWER_MAX_AGE_MS: String(ANSWER_MAX_AGE_MS),
      LOCAL_ANSWER_SWEEP_MS: '200',
      LOCAL_SHUTDOWN_GRACE_MS: '500',
      // Small enough that SUBJECT (60 rows) goes to the bucket behind a 303.
      INLINE_LIMIT_BYTES: '1024',
    },
  });
});
afterAll(async () => {
  await stack?.stop();
});

const health = async () => (await fetch(`${stack.url}/health`)).status;

describe('local stack: nothing a client sends stops it', () => {
  // Request-targets and lines the HTTP parser or a URL parser refuses, each a class of its own.
  const refused = [
    'GET //[x]/health HTTP/1.1',
    'GET //health HTTP/1.1',
    'GET http://[x/health HTTP/1.1',
    'GET http://a:99999/health HTTP/1.1',
    'GET ftp://localhost/health HTTP/1.1',
    'GET * HTTP/1.1',
    'OPTIONS * HTTP/1.1',
    'CONNECT localhost:443 HTTP/1.1',
    'GET localhost/health HTTP/1.1',
    'GET /health\x01 HTTP/1.1',
    'GET /he alth HTTP/1.1',
    'BREW /health HTTP/1.1',
    'GET /health HTTP/9.9',
    '\x00\x01\x02',
  ];
  for (const line of refused) {
    it(`answers 400 to ${JSON.stringify(line)} and keeps serving`, async () => {
      const answer = await rawRequest(stack.port, requestLine(line));
      expect(answer.status).toBe(400);
      expect(await health()).toBe(200);
    });
  }

  it('answers 431 to oversized headers, 400 to malformed ones', async () => {
    const huge = await rawRequest(
      stack.port,
      requestLine('GET /health HTTP/1.1', `X-Big: ${'a'.repeat(70_000)}\r\n`),
    );
    expect(huge.status).toBe(431);
    const malformed = await rawRequest(stack.port, requestLine('GET /health HTTP/1.1', 'Bad Header\r\n'));
    expect(malformed.status).toBe(400);
    expect(await health()).toBe(200);
  });

  it('serves absolute-form targets and leaves invalid percent-escapes to a clear 4xx', async () => {
    const absolute = await rawRequest(stack.port, requestLine('GET http://localhost/health HTTP/1.1'));
    expect(absolute.status).toBe(200);
    const escapes = await rawRequest(
      stack.port,
      requestLine('GET /demo/JsonAPI/Data/getData/%ZZ%E0%A4 HTTP/1.1', `Authorization: ${DEMO_AUTH}\r\n`),
    );
    expect(escapes.status).toBe(400);
    expect(await health()).toBe(200);
  });

  it('survives a client that goes away in the middle of a body', async () => {
    const partial = rawRequest(
      stack.port,
      'POST /demo/WebAPI/getData HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{"vltyp":',
      1000,
    ).catch(() => undefined);
    await partial;
    expect(await health()).toBe(200);
  });
});

describe('local stack: routes come from serverless.yml', () => {
  it('serves every httpApi route of serverless.yml through its handler (no gateway 404)', async () => {
    const routes = lambdaRoutes();
    expect(routes.length).toBeGreaterThanOrEqual(9);
    for (const route of routes) {
      const path = route.path.replace('{tenant}', 'demo').replace(/\{\w+\}/g, 'SUBJECT');
      const response = await fetch(`${stack.url}${path}`, { method: route.method });
      const body = await response.text();
      // Without credentials every route's own handler refuses: never the gateway's `route_not_found`.
      // The authorization server's published key set and metadata are public (CONTRACT 4d).
      if (path.includes('/.well-known/')) expect(response.status, path).toBe(200);
      else expect(response.status, `${route.method} ${path}`).toBeGreaterThanOrEqual(400);
      expect(response.status, `${route.method} ${path}`).toBeLessThan(500);
      expect(body, `${route.method} ${path}`).not.toContain('route_not_found');
    }
  });
});

describe('local stack: errors that teach', () => {
  it('answers a route without the tenant with 404 route_not_found saying how routes start and where /docs is', async () => {
    for (const path of [
      '/JsonAPI/Data/getData/SUBJECT',
      '/WebAPI/test',
      '/demo/JsonAPI/Data/nothing/SUBJECT',
    ]) {
      const response = await fetch(`${stack.url}${path}`);
      expect(response.status, path).toBe(404);
      const body = (await response.json()) as { message: string; code: string };
      expect(body.code, path).toBe('route_not_found');
      expect(body.message, path).toContain(`no route for GET ${path}`);
      expect(body.message, path).toContain('Routes start with the tenant: /{tenant}/JsonAPI/');
      expect(body.message, path).toContain('/demo/WebAPI/test');
      expect(body.message, path).toContain('The API reference is at /docs.');
    }
    // Linked pages of the message are real: /docs answers the reference.
    expect((await fetch(`${stack.url}/docs`)).status).toBe(200);
  });

  it('answers a discovery at a well-known path it does not serve with where the OAuth 2.0 metadata is', async () => {
    for (const path of [
      '/demo/.well-known/openid-configuration',
      '/.well-known/openid-configuration/demo',
      '/.well-known/oauth-authorization-server',
    ]) {
      const response = await fetch(`${stack.url}${path}`);
      expect(response.status, path).toBe(404);
      const body = (await response.json()) as { message: string; code: string };
      expect(body.code, path).toBe('route_not_found');
      expect(body.message, path).toContain('metadata is at /.well-known/oauth-authorization-server/{tenant}');
    }
    // The place it names answers.
    expect((await fetch(`${stack.url}/.well-known/oauth-authorization-server/demo`)).status).toBe(200);
  });

  it('answers a wrong method on an existing route 405 with Allow and a message naming the method', async () => {
    const cases = [
      ['POST', '/demo/JsonAPI/Data/getData/SUBJECT', 'GET'],
      ['GET', '/demo/WebAPI/getData', 'POST'],
      ['DELETE', '/demo/WebAPI/test', 'GET'],
      ['PUT', '/demo/JsonAPI/File/setFile', 'POST'],
      ['POST', '/health', 'GET'],
    ] as const;
    for (const [method, path, allowed] of cases) {
      const response = await fetch(`${stack.url}${path}`, { method, headers: { authorization: DEMO_AUTH } });
      expect(response.status, `${method} ${path}`).toBe(405);
      expect(response.headers.get('allow'), path).toBe(allowed);
      const body = (await response.json()) as { message: string; code: string };
      expect(body.code).toBe('method_not_allowed');
      expect(body.message).toContain(`${path} takes ${allowed}, not ${method}`);
    }
    // A path no route has stays 404.
    expect((await fetch(`${stack.url}/demo/JsonAPI/Data/nothing/SUBJECT`, { method: 'POST' })).status).toBe(
      404,
    );
  });

  it("answers GET /docs/{tenant} of a tenant that does not exist 404, and a known tenant's page 200", async () => {
    const unknown = await fetch(`${stack.url}/docs/nobody-here`);
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({
      error: { code: 'tenant_not_found', message: 'Tenant "nobody-here" does not exist' },
    });
    const known = await fetch(`${stack.url}/docs/demo`);
    expect(known.status).toBe(200);
    expect(known.headers.get('content-type')).toMatch(/^text\/html/);
  });

  it('redirects GET / to the API reference at /docs', async () => {
    const response = await fetch(`${stack.url}/`, { redirect: 'manual' });
    expect(response.status).toBe(302);
    expect(response.headers.get('location')).toBe('/docs');
    const followed = await fetch(`${stack.url}/`);
    expect(followed.url).toBe(`${stack.url}/docs`);
    expect(await followed.text()).toContain('API reference');
  });
});

describe('local stack: time limit', () => {
  it('answers 503 at the limit, as HTTP API does, and stops the query so the next request does not wait', async () => {
    const read = () =>
      fetch(`${stack.url}/demo/JsonAPI/Data/getData/DOKUMENT`, {
        headers: { authorization: DEMO_AUTH },
        redirect: 'manual',
      });
    // Once cold (the table's first read), then warm: reading 100,000 rows takes seconds either way.
    expect((await read()).status).toBe(503);
    // The stack runs in this process: the longest stall of its event loop is the statement that
    // could not be interrupted (PGlite runs each one synchronously).
    let longestStall = 0;
    let last = Date.now();
    const watch = setInterval(() => {
      const now = Date.now();
      longestStall = Math.max(longestStall, now - last);
      last = now;
    }, 10);
    const started = Date.now();
    const response = await read();
    const elapsed = Date.now() - started;
    clearInterval(watch);
    expect(response.status).toBe(503);
    expect(await response.json()).toEqual({ message: 'Service Unavailable' });
    // At the limit, late at most by the statement running then, never when the read would have ended.
    expect(elapsed).toBeGreaterThanOrEqual(GATEWAY_TIMEOUT_MS - 50);
    expect(elapsed).toBeLessThan(GATEWAY_TIMEOUT_MS + longestStall + 1000);
    // The read stopped: its cursor is closed in the database.
    await expect
      .poll(openReadCursors, {
        timeout: 1000,
      })
      .toBe(0);
    const next = Date.now();
    const count = await fetch(`${stack.url}/demo/JsonAPI/Data/getRowsCount/SUBJECT`, {
      headers: { authorization: DEMO_AUTH },
    });
    expect(count.status).toBe(200);
    expect(Date.now() - next).toBeLessThan(1000);
  });
});

describe('local stack: a body that never ends', () => {
  it('is answered 408 at the gateway time-out and its connection closed, as API Gateway bounds a request', async () => {
    const started = Date.now();
    // Half the body, then silence with the connection open (no half-close before the answer).
    const answer = await rawRequest(
      stack.port,
      'POST /demo/WebAPI/getData HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{"vltyp":',
      GATEWAY_TIMEOUT_MS + 5000,
      GATEWAY_TIMEOUT_MS + 4000,
    );
    const elapsed = Date.now() - started;
    expect(answer.status).toBe(408);
    expect(JSON.parse(answer.body)).toEqual({ message: 'Request Timeout' });
    expect(elapsed).toBeGreaterThanOrEqual(GATEWAY_TIMEOUT_MS - 50);
    expect(elapsed).toBeLessThan(GATEWAY_TIMEOUT_MS + 1500);
    expect(await health()).toBe(200);
  });
});

describe('local stack: large answers expire with their URLs', () => {
  it('deletes a 303 answer from the local bucket once its URL could no longer be used', async () => {
    const response = await fetch(`${stack.url}/demo/JsonAPI/Data/getData/SUBJECT`, {
      headers: { authorization: DEMO_AUTH },
      redirect: 'manual',
    });
    expect(response.status).toBe(303);
    const location = response.headers.get('location')!;
    expect((await fetch(location)).status).toBe(200);
    // The answer's own object (path-style URL: /<bucket>/<key>); other tests' answers may be there too.
    const key = decodeURIComponent(new URL(location).pathname.slice(`/${LARGE_ANSWER_BUCKET}/`.length));
    const s3 = new S3Client({ endpoint: `http://127.0.0.1:${stack.emulator.port}`, forcePathStyle: true });
    const stored = async () =>
      ((await s3.send(new ListObjectsV2Command({ Bucket: LARGE_ANSWER_BUCKET }))).Contents ?? []).some(
        (o) => o.Key === key,
      );
    expect(await stored()).toBe(true);
    await expect.poll(stored, { timeout: ANSWER_MAX_AGE_MS + 3000, interval: 100 }).toBe(false);
    expect((await fetch(location)).status).toBe(404);
    s3.destroy();
  });
});

describe('local stack: shutdown', () => {
  it('stops accepting, answers a request still in flight with 503 after the grace period, and ends', async () => {
    const inFlight = fetch(`${stack.url}/demo/JsonAPI/Data/getData/DOKUMENT`, {
      headers: { authorization: DEMO_AUTH },
      redirect: 'manual',
    });
    // In flight: its read has opened a cursor (a connection whose request has not arrived yet is
    // idle to the server, and closed at once).
    await expect.poll(openReadCursors, { timeout: 10_000, interval: 20 }).toBe(1);
    const started = Date.now();
    const stopped = stack.stop();
    const answer = await inFlight;
    expect(answer.status).toBe(503);
    await stopped;
    // The grace period (500 ms) and the emulator's and database's own stop, not a read's end.
    // A few seconds on a busy machine; a read of the whole table would take ten or more.
    expect(Date.now() - started).toBeLessThan(6000);
    await expect(fetch(`${stack.url}/health`)).rejects.toThrow();
  });
});
