import { afterEach, expect } from 'vitest';
import { readOpenApiDocument } from '../../infra/local/docs-routes.js';
import { gatewayAnswers } from '../../infra/local/local-http.js';
import { openApiResponseChecker } from './openapi-responses.js';

/**
 * Setup file of the e2e suites: every answer a test receives through `fetch` from a route of
 * docs/openapi.yaml is checked against it (a documented status, the headers declared required, a
 * JSON or XML body valid against its schema), and a test whose answers do not conform fails. Other
 * addresses (webhook receivers, S3, the local stack's own routes) pass untouched, and so do an
 * answer `fetch` reached by following a redirect (the service's 303 itself was not seen) and
 * API Gateway's own answers, given before any function runs (as the document's introduction says).
 */
const GATEWAY_ANSWERS = new Set(
  Object.values(gatewayAnswers).map(({ status, message }) => `${status} ${JSON.stringify({ message })}`),
);
const testPath = expect.getState().testPath ?? '';
if (/[\\/]tests[\\/]e2e[\\/]/.test(testPath)) {
  const checker = openApiResponseChecker(await readOpenApiDocument());
  const problems: string[] = [];
  const unchecked = globalThis.fetch;
  globalThis.fetch = async function checkedFetch(input, init) {
    const response = await unchecked(input, init);
    if (response.redirected) return response;
    const method = (init?.method ?? (input instanceof Request ? input.method : 'GET')).toUpperCase();
    const unlisted = checker.check(method, response.url, { status: 0, headers: response.headers, body: '' });
    if (unlisted.some((problem) => problem.endsWith('is not in the document'))) return response;
    // A redirect's body is nothing the document describes; leaving it unread keeps the connection as a client would.
    const body = response.status >= 300 && response.status < 400 ? '' : await response.clone().text();
    if (GATEWAY_ANSWERS.has(`${response.status} ${body}`)) return response;
    const found = checker.check(method, response.url, {
      status: response.status,
      headers: response.headers,
      body,
    });
    problems.push(...found.filter((problem) => !problem.endsWith('is not in the document')));
    return response;
  };
  afterEach(() => {
    expect(problems.splice(0), 'answers that do not conform to docs/openapi.yaml').toEqual([]);
  });
}
