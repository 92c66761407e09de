import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { LocalFunctionInstances } from '../../infra/local/function-instances.js';
import { readServerlessConfig } from '../../infra/local/serverless-config.js';
import { AfterAnswerExtension } from '../../shared/adapters/lambda/after-answer-extension.js';
import { afterAnswer } from '../../shared/lambda/after-answer.js';

const POOL = { maxConnections: 1, acquireTimeoutMs: 1000, idleTimeoutMs: 1000 };
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Lambda's Extensions API as the documentation gives it, on loopback: `register` answers the
 * extension's identifier; `event/next` is held until the test starts an invocation. The times the
 * extension asks for its next event are what Lambda waits for before it ends an invocation.
 */
async function extensionsApi() {
  const asked: number[] = [];
  const registered: { name?: string; events?: unknown }[] = [];
  let pending: ServerResponse | undefined;
  let waiting: (() => void) | undefined;
  const server = createServer(async (request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    if (request.method === 'POST' && request.url === '/2020-01-01/extension/register') {
      registered.push({
        name: request.headers['lambda-extension-name'] as string,
        events: JSON.parse(Buffer.concat(chunks).toString()).events,
      });
      response.writeHead(200, { 'lambda-extension-identifier': 'ext-1', 'content-type': 'application/json' });
      response.end('{}');
      return;
    }
    if (request.method === 'GET' && request.url === '/2020-01-01/extension/event/next') {
      expect(request.headers['lambda-extension-identifier']).toBe('ext-1');
      asked.push(performance.now());
      pending = response;
      waiting?.();
      return;
    }
    response.writeHead(404).end();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const untilAsked = async (count: number) => {
    while (asked.length < count) await new Promise<void>((resolve) => (waiting = resolve));
  };
  return {
    runtimeApi: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    asked,
    registered,
    untilAsked,
    /** Starts invocation `requestId`: the extension's held `next` answers INVOKE. */
    invoke(requestId: string, deadlineMs = Date.now() + 30_000) {
      const response = pending!;
      pending = undefined;
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ eventType: 'INVOKE', requestId, deadlineMs }));
    },
    close: () => {
      pending?.destroy();
      server.closeAllConnections();
      server.close();
    },
  };
}

let api: Awaited<ReturnType<typeof extensionsApi>> | undefined;
afterEach(() => api?.close());

describe('the after-answer extension (Lambda Extensions API)', () => {
  it('registers for INVOKE only and ends each invocation only once its deferred work is done', async () => {
    api = await extensionsApi();
    const errors: unknown[] = [];
    const extension = await AfterAnswerExtension.register(api.runtimeApi, 'after-answer', (_m, error) =>
      errors.push(error),
    );
    expect(extension).toBeDefined();
    expect(api.registered).toEqual([{ name: 'after-answer', events: ['INVOKE'] }]);
    await api.untilAsked(1); // init done

    api.invoke('r-1');
    let started = 0;
    let finishWork: () => void = () => {};
    // The handler defers its work, then returns its answer.
    extension!.defer('r-1', async () => {
      started = performance.now();
      await new Promise<void>((resolve) => (finishWork = resolve));
    });
    await pause(20);
    expect(started).toBe(0); // nothing runs before the answer
    const returned = performance.now();
    extension!.answered('r-1');
    await pause(20);
    expect(started).toBeGreaterThanOrEqual(returned);
    expect(api.asked).toHaveLength(1); // the invocation is not over while the work runs
    const finished = performance.now();
    finishWork();
    await api.untilAsked(2);
    expect(api.asked[1]!).toBeGreaterThanOrEqual(finished);

    // An invocation whose handler returns before its INVOKE event is read, with nothing deferred.
    extension!.answered('r-2');
    await pause(5);
    api.invoke('r-2');
    await api.untilAsked(3);
    expect(errors).toEqual([]);
  });

  it('does not hold an invocation past its deadline when its handler never says it returned', async () => {
    api = await extensionsApi();
    const extension = await AfterAnswerExtension.register(api.runtimeApi, 'after-answer', () => {});
    await api.untilAsked(1);
    const invoked = performance.now();
    api.invoke('r-lost', Date.now() + 200);
    await api.untilAsked(2);
    expect(performance.now() - invoked).toBeGreaterThanOrEqual(150);
    expect(extension).toBeDefined();
  });

  it('is not registered when the Extensions API refuses it (the work then runs before the answer)', async () => {
    const errors: string[] = [];
    const refusing = createServer((_request, response) => response.writeHead(403).end('{}'));
    refusing.listen(0, '127.0.0.1');
    await once(refusing, 'listening');
    const extension = await AfterAnswerExtension.register(
      `127.0.0.1:${(refusing.address() as AddressInfo).port}`,
      'after-answer',
      (message) => errors.push(message),
    );
    refusing.close();
    expect(extension).toBeUndefined();
    expect(errors).toEqual(['after-answer extension not registered']);
  });
});

describe('work after the answer on the local stack', () => {
  it('returns the answer at once and keeps the instance busy until the work is done', async () => {
    const instances = new LocalFunctionInstances('fn', POOL, 1);
    let finishWork: () => void = () => {};
    let workDone = false;
    const answer = await instances.invoke(async () => {
      await afterAnswer('r-1', async () => {
        await new Promise<void>((resolve) => (finishWork = resolve));
        workDone = true;
      });
      return 'answer';
    });
    expect(answer).toBe('answer');
    expect(workDone).toBe(false);
    await pause(5);
    // The instance is still working: at a reserved concurrency of 1, another invocation is refused.
    expect(instances.running).toBe(1);
    await expect(instances.invoke(async () => 'second')).rejects.toThrow('Rate Exceeded');
    finishWork();
    await pause(5);
    expect(workDone).toBe(true);
    expect(instances.running).toBe(0);
    expect(await instances.invoke(async () => 'third')).toBe('third');
  });

  it('runs the work before the answer where nothing can run it after (a handler called directly)', async () => {
    let workDone = false;
    await afterAnswer('r-1', async () => {
      await pause(5);
      workDone = true;
    });
    expect(workDone).toBe(true);
  });
});

describe('every HTTP function', () => {
  it('registers the extension during its init, so that its slot goes back after the answer', () => {
    const config = readServerlessConfig();
    const http = Object.values(config.functions).filter((fn) => fn.events?.some((event) => event.httpApi));
    expect(http).toHaveLength(13);
    for (const fn of http) {
      const file = `${fn.handler.replace(/\.handler$/, '')}.ts`;
      // At the top level of the entry file: Lambda takes registrations during init only.
      expect(readFileSync(file, 'utf8'), file).toMatch(/^await registerAfterAnswerExtension\(\);$/m);
    }
  });
});
