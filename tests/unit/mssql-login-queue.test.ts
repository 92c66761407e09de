import { createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeSharedPool, LOGINS_AT_ONCE, sharedPool } from '../../shared/adapters/mssql/connection.js';
import { DatabaseUnavailableError } from '../../shared/core/database.js';

/**
 * A cold burst against a server whose logins never finish (a TCP server that accepts and stays
 * silent): each statement waits for its pool's first connection no longer than the acquire
 * time-out, and one process logs in to one server at most LOGINS_AT_ONCE at a time.
 */
let server: Server;
let port: number;
const TARGET = {
  get connectionString() {
    return `Server=127.0.0.1,${port};Database=x;User Id=u;Password=p;Encrypt=false;Connect Timeout=30`;
  },
};
let open = 0;
let mostOpen = 0;
const sockets = new Set<Socket>();

beforeAll(async () => {
  server = createServer((socket) => {
    sockets.add(socket);
    open++;
    mostOpen = Math.max(mostOpen, open);
    socket.on('close', () => {
      open--;
      sockets.delete(socket);
    });
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as { port: number }).port;
});
afterAll(async () => {
  // No new connection is accepted, the open ones end: the queued logins fail at once.
  const closed = new Promise((resolve) => server.close(resolve));
  for (const socket of sockets) socket.destroy();
  await closeSharedPool(TARGET);
  await closed;
}, 30_000);

describe('SQL Server logins in a cold burst', () => {
  it('answers every statement within the acquire time-out, and opens at most LOGINS_AT_ONCE logins at once', async () => {
    const acquireTimeoutMs = 600;
    const target = TARGET;
    const started = performance.now();
    const outcomes = await Promise.all(
      Array.from({ length: 12 }, async (_, instance) => {
        const owner = {
          id: `instance-${instance}`,
          settings: { maxConnections: 2, acquireTimeoutMs, idleTimeoutMs: 60_000 },
        };
        const asked = performance.now();
        const error = await sharedPool(target, owner).then(
          () => undefined,
          (e: unknown) => e,
        );
        return { error, waited: performance.now() - asked };
      }),
    );
    for (const { error, waited } of outcomes) {
      expect(error).toBeInstanceOf(DatabaseUnavailableError);
      expect((error as Error).message).toContain('within the acquire time-out (600 ms)');
      expect(waited).toBeGreaterThanOrEqual(acquireTimeoutMs - 20);
      expect(waited).toBeLessThan(acquireTimeoutMs + 400);
    }
    expect(performance.now() - started).toBeLessThan(acquireTimeoutMs + 1000);
    expect(mostOpen).toBeGreaterThan(0);
    expect(mostOpen).toBeLessThanOrEqual(LOGINS_AT_ONCE);
  });
});
