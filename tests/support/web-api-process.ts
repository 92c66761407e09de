/**
 * A Lambda instance of `webGetData` in a process of its own, for the fault tests of CONTRACT 5a
 * (tests/tsql/exactly-once-faults.test.ts): the test kills it with SIGKILL where a Lambda
 * instance can die (its time-out, an out-of-memory, a host gone), and the database sees only
 * what a dead client leaves: a connection that drops with its transaction open.
 *
 * Messages from the parent: `{ event }` invokes the handler once (it answers `invoking`, then
 * `{ answer }`); with `dieAfterAnswer` it kills itself once the handler has answered, so that
 * the answer, committed, never reaches the client.
 */
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { handler } from '../../functions/web-api/getData.js';

interface Invocation {
  readonly event: APIGatewayProxyEventV2;
  readonly dieAfterAnswer?: boolean;
}

process.on('message', async (message: Invocation) => {
  process.send!('invoking');
  const context = { awsRequestId: `child-${process.pid}`, functionName: 'webGetData' } as Context;
  const answer = await handler(message.event, context);
  process.send!({ answer }, () => {
    if (message.dieAfterAnswer) process.kill(process.pid, 'SIGKILL');
  });
});
process.send!('ready');
