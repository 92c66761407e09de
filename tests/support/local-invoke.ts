/**
 * A function of the local stack at `stackUrl` invoked as the Lambda Invoke API does it (the route
 * the stack serves under `/2015-03-31/functions/<name>/invocations`), with `payload` as its event
 * and `headers` on the request (a `traceparent`, for one).
 */
export function invokeLocal(
  stackUrl: string,
  functionName: string,
  payload: unknown,
  headers: Record<string, string> = {},
): Promise<Response> {
  return fetch(`${stackUrl}/2015-03-31/functions/${functionName}/invocations`, {
    method: 'POST',
    headers,
    body: JSON.stringify(payload),
  });
}
