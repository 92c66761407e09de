import { describe, expect, it } from 'vitest';
import { readOpenApiDocument } from '../../infra/local/docs-routes.js';
import { openApiResponseChecker } from '../support/openapi-responses.js';

const checker = openApiResponseChecker(await readOpenApiDocument());
const BASE = 'http://127.0.0.1:3000';
const answer = (status: number, headers: Record<string, string>, body: string) => ({
  status,
  headers: new Headers(headers),
  body,
});
/** CONTRACT 8a: the service's span, on every answer that names its request. */
const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
const XML = '<?xml version="1.0" encoding="UTF-8"?>';
const test = (headers: Record<string, string>, body: string) =>
  checker.check('GET', `${BASE}/demo/WebAPI/test`, answer(200, headers, body));
const getData = (status: number, contentType: string, body: string) =>
  checker.check(
    'POST',
    `${BASE}/demo/WebAPI/getData`,
    answer(status, { 'content-type': contentType, 'x-request-id': 'r1', traceparent: TRACEPARENT }, body),
  );

describe('openApiResponseChecker', () => {
  it('wants the headers the document declares required, x-request-id on every Data API answer too', () => {
    const url = `${BASE}/demo/JsonAPI/Data/getRowsCount/SUBJECT`;
    const body = '{"SUBJECT":[{"rowsCount":60}]}';
    const headers = {
      'content-type': 'application/json; charset=utf-8',
      'x-request-id': 'r1',
      traceparent: TRACEPARENT,
      etag: '"t"',
      'cache-control': 'private, no-cache',
    };
    expect(checker.check('GET', url, answer(200, headers, body))).toEqual([]);
    const { 'x-request-id': _id, ...withoutId } = headers;
    expect(checker.check('GET', url, answer(200, withoutId, body))).toEqual([
      'getRowsCount 200: header x-request-id is missing',
    ]);
    const { traceparent: _trace, ...untraced } = headers;
    expect(checker.check('GET', url, answer(200, untraced, body))).toEqual([
      'getRowsCount 200: header traceparent is missing',
    ]);
    // A read's conditional-request headers (CONTRACT 4a) are required too.
    expect(
      checker.check(
        'GET',
        url,
        answer(
          200,
          { 'content-type': 'application/json', 'x-request-id': 'r1', traceparent: TRACEPARENT },
          body,
        ),
      ),
    ).toEqual([
      'getRowsCount 200: header ETag is missing',
      'getRowsCount 200: header Cache-Control is missing',
    ]);
    const denied = '{"error":{"code":"unauthorized","message":"no","requestId":"r1"}}';
    expect(checker.check('GET', url, answer(401, { 'content-type': 'application/json' }, denied))).toEqual([
      'getRowsCount 401: header x-request-id is missing',
      'getRowsCount 401: header traceparent is missing',
      'getRowsCount 401: header WWW-Authenticate is missing',
    ]);
  });

  it('holds a Data API error code to the enumeration', () => {
    const url = `${BASE}/demo/JsonAPI/Data/getData/SUBJECT`;
    const headers = { 'content-type': 'application/json', 'x-request-id': 'r1', traceparent: TRACEPARENT };
    const body = (code: string) => JSON.stringify({ error: { code, message: 'm', requestId: 'r1' } });
    expect(checker.check('GET', url, answer(404, headers, body('data_source_not_found')))).toEqual([]);
    expect(checker.check('GET', url, answer(404, headers, body('no_such_code')))[0]).toMatch(
      /does not match/,
    );
  });

  it('reads an XML answer (application/xml or text/xml) through the schema and its xml objects', () => {
    const ok = `${XML}<result><status>ok</status><version>0.1.0</version></result>`;
    for (const type of ['application/xml', 'text/xml'])
      expect(
        test(
          { 'content-type': `${type}; charset=utf-8`, 'x-request-id': 'r1', traceparent: TRACEPARENT },
          ok,
        ),
      ).toEqual([]);
    const xml = { 'content-type': 'text/xml; charset=utf-8', 'x-request-id': 'r1', traceparent: TRACEPARENT };
    expect(test(xml, `${XML}<result><status>ok</status></result>`)[0]).toMatch(/does not match.*version/);
    expect(test(xml, `${XML}<answer><status>ok</status><version>1</version></answer>`)).toEqual([
      'webApiTest 200: root element <answer>, not <result>',
    ]);
    expect(test({ ...xml, 'content-type': 'text/plain' }, 'ok')).toEqual([
      'webApiTest 200: content type "text/plain" is not documented',
    ]);
  });

  it('checks rows, 997 and errors in XML, and refuses an element the schema does not name', () => {
    const rows = `${XML}<result><id>42</id><vlResult>1</vlResult><data><rowSubject><id>1</id><nazev>Alfa</nazev></rowSubject><rowSubject><id>2</id></rowSubject></data></result>`;
    expect(getData(200, 'application/xml', rows)).toEqual([]);
    const finished = `${XML}<result><id>45</id><vlResult>1</vlResult><data><resultForId><id>43</id><vlResult>1</vlResult><data><rowSleep><slept>2</slept></rowSleep></data></resultForId><id>43</id></data></result>`;
    expect(getData(200, 'text/xml', finished)).toEqual([]);
    const running = `${XML}<result><id>44</id><vlResult>1</vlResult><data><resultForId><errorCode>160</errorCode><errorMessage>running</errorMessage></resultForId><idwsJournal>43</idwsJournal></data></result>`;
    expect(getData(200, 'text/xml', running)).toEqual([]);
    const error = `${XML}<result><id/><vlResult>-1</vlResult><data><error><errorCode>102</errorCode><errorMessage>no</errorMessage></error></data></result>`;
    expect(getData(401, 'text/xml', error)).toEqual([]);
    expect(getData(401, 'text/xml', error.replace('102', '999'))[0]).toMatch(/does not match/);
    expect(getData(200, 'text/xml', rows.replace('<data>', '<data><surprise>1</surprise>'))[0]).toMatch(
      /does not match/,
    );
  });

  it('checks a receipt webhook against the document: every Standard Webhooks header and the bare number', () => {
    const headers = {
      'content-type': 'application/json',
      'webhook-id': 'msg_1',
      'webhook-timestamp': '1700000000',
      'webhook-signature': 'v1,Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmFyYmE= v1,b2xkb2xkb2xk',
      'x-peppol-webhook-secret': 'secret',
    };
    const post = { method: 'POST', headers, body: '123456' };
    expect(checker.checkWebhook('documentReceived', post)).toEqual([]);
    const { 'webhook-timestamp': _t, ...untimed } = headers;
    expect(checker.checkWebhook('documentReceived', { ...post, headers: untimed })).toEqual([
      'webhook documentReceived: header webhook-timestamp is missing',
    ]);
    expect(
      checker.checkWebhook('documentReceived', {
        ...post,
        headers: { ...headers, 'webhook-signature': 'sig' },
      }),
    ).toHaveLength(1);
    expect(checker.checkWebhook('documentReceived', { ...post, body: '"123456"' })).toHaveLength(1);
  });
});
