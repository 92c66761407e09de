import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
let child: ChildProcess | undefined;

/** Whether something listens on a loopback port. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
afterAll(() => {
  if (!child?.pid || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch (error) {
    // Its group ended meanwhile.
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
  }
});

describe('npm start', () => {
  it('starts the local stack, prints URLs and demo credentials, serves, and stops cleanly on SIGTERM', async () => {
    const started = Date.now();
    child = spawn('npm', ['start', '--silent'], {
      env: { ...process.env, PORT: '0', LOG_LEVEL: 'INFO' },
      stdio: ['ignore', 'pipe', 'pipe'],
      // Its own process group, as in a terminal, where Ctrl+C signals npm and the stack together.
      detached: true,
    });
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    const base = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`not ready in time:\n${output}`)), 60_000);
      const check = () => {
        const match = /Health\s+(http:\/\/127\.0\.0\.1:\d+)\/health/.exec(output);
        if (match) {
          clearTimeout(timer);
          resolve(match[1]!);
        }
      };
      child!.stdout!.on('data', check);
      child!.once('exit', (code) => reject(new Error(`exited with ${code}:\n${output}`)));
    });
    console.log(`npm start: ready after ${Date.now() - started} ms`);
    expect(output).toContain('demo / demo-password');
    expect(output).toContain('demo-client / demo-client-secret');
    // On the T-SQL engine, the login to look inside its database (the engine's own, loopback only).
    if (process.env.LOCAL_DATABASE === 'tsql' && !process.env.MSSQL_URL) {
      expect(output).toMatch(
        /^ {15}login: Server=127\.0\.0\.1,\d+;.*User Id=[^;]+;Password=[^;]+;.*Database=demo/m,
      );
    }
    expect(output).toContain('demo-api-key');
    const health = await fetch(`${base}/health`);
    expect(await health.json()).toEqual({ status: 'ok' });
    const count = await fetch(`${base}/demo/JsonAPI/Data/getRowsCount/SUBJECT`, {
      headers: { authorization: `Basic ${Buffer.from('demo:demo-password').toString('base64')}` },
    });
    expect(await count.json()).toEqual({ SUBJECT: [{ rowsCount: 60 }] });
    // A development server's line per request, not the JSON that Lambda writes, with the id of the
    // function's invocation and the trace id of the answer's traceparent (CONTRACT 8a).
    const traceIdOf = (answer: Response) => answer.headers.get('traceparent')?.split('-')[1];
    await expect
      .poll(() => output)
      .toMatch(
        new RegExp(
          `^GET /demo/JsonAPI/Data/getRowsCount/SUBJECT 200 \\d+ ms requestId=[0-9a-f-]{36} caller=basic:demo traceId=${traceIdOf(count)}$`,
          'm',
        ),
      );
    expect(output).not.toMatch(/^\{"level"/m);
    // An error answer's requestId and code are on its line, as the function's log has them.
    const refused = await fetch(`${base}/demo/JsonAPI/Data/getRowsCount/SUBJECT`);
    const { error } = (await refused.json()) as { error: { code: string; requestId: string } };
    expect(refused.status).toBe(401);
    await expect
      .poll(() => output)
      .toMatch(
        new RegExp(
          `^GET /demo/JsonAPI/Data/getRowsCount/SUBJECT 401 \\d+ ms requestId=${error.requestId} errorCode=${error.code} traceId=${traceIdOf(refused)}$`,
          'm',
        ),
      );
    // The Web API's error answers too (their code is the Web API's errorCode).
    const unsigned = await fetch(`${base}/demo/WebAPI/test`);
    const webApiError = (await unsigned.json()) as { data: { error: { errorCode: string }[] }[] };
    const webApiRequestId = unsigned.headers.get('x-request-id');
    expect(webApiRequestId).toBeTruthy();
    await expect
      .poll(() => output)
      .toMatch(
        new RegExp(
          `^GET /demo/WebAPI/test ${unsigned.status} \\d+ ms requestId=${webApiRequestId} errorCode=${webApiError.data[0]!.error[0]!.errorCode} traceId=${traceIdOf(unsigned)}$`,
          'm',
        ),
      );

    const exited = new Promise<string>((resolve) =>
      child!.once('exit', (code, signal) => resolve(`${code ?? signal}`)),
    );
    process.kill(-child.pid!, 'SIGTERM');
    // npm itself may end by the signal; the stack must shut down cleanly.
    expect(['0', 'SIGTERM']).toContain(await exited);
    await expect
      .poll(
        async () =>
          fetch(`${base}/health`).then(
            () => 'up',
            () => 'down',
          ),
        { timeout: 10_000 },
      )
      .toBe('down');
    // Printed by the stack process; through npm's and tsx's pipes it may arrive after the port closed.
    await expect.poll(() => output, { timeout: 5000 }).toContain('SIGTERM received: stopping');
    // LOCAL_DATABASE=tsql (test:tsql): the engine it started is stopped with it.
    const engine = /T-SQL engine \(Babelfish\) on 127\.0\.0\.1:(\d+)/.exec(output);
    expect(Boolean(engine)).toBe(process.env.LOCAL_DATABASE === 'tsql' && !process.env.MSSQL_URL);
    if (engine) await expect.poll(() => accepts(Number(engine[1])), { timeout: 15_000 }).toBe(false);
  }, 90_000);
});

describe('npm start with a setting it refuses', () => {
  it('says so in one line naming the setting and the fix, exits 1, and prints no stack trace', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'npm-start-refused-'));
    try {
      const registry = JSON.parse(await readFile('infra/local/tenants.json', 'utf8')) as {
        tenants: Record<string, Record<string, unknown>>;
      };
      // At the default reserved concurrency of each function (64): a share that would hold it all.
      registry.tenants.demo!.limits = { concurrentRequests: 64, requestsPerSecond: 100 };
      const file = join(dir, 'tenants.json');
      await writeFile(file, JSON.stringify(registry));
      const refused = await run('npm', ['start', '--silent'], {
        env: { ...process.env, PORT: '0', TENANT_REGISTRY_FILE: file },
        timeout: 60_000,
      }).catch((error: { code: number; stdout: string; stderr: string }) => error);
      expect(refused).toMatchObject({ code: 1 });
      const { stderr } = refused as { stderr: string };
      expect(stderr.trim().split('\n')).toEqual([
        expect.stringMatching(
          /^npm start: Invalid tenant registry: tenants\.demo\.limits\.concurrentRequests: must be below .* raise requestFunctionConcurrency/,
        ),
      ]);
      expect(stderr).not.toMatch(/^\s+at /m);
      const port = await run('npm', ['start', '--silent'], {
        env: { ...process.env, PORT: 'abc' },
        timeout: 60_000,
      }).catch((error: { code: number; stderr: string }) => error);
      expect(port).toMatchObject({
        code: 1,
        stderr: 'npm start: PORT must be an integer between 0 and 65535, got "abc"\n',
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
