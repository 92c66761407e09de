import sql from 'mssql';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  closeSharedPool,
  DEFAULT_POOL_SETTINGS,
  mapError,
  poolConfig,
  poolOptions,
  sharedPool,
} from '../../shared/adapters/mssql/connection.js';
import { currentFunctionInstance, runAsFunctionInstance } from '../../shared/config/function-instance.js';
import { databasePoolFromEnv, getSettings, resetSettings } from '../../shared/config/settings.js';
import { DatabaseBusyError, DatabaseUnavailableError } from '../../shared/core/database.js';
import { WebApiErrorCode } from '../../shared/core/web-api/envelope.js';
import { toServiceError } from '../../shared/lambda/http.js';
import { renderWebApiError, toWebApiError } from '../../shared/lambda/web-api/http.js';

const settings = (maxConnections: number, acquireTimeoutMs = 100) => ({
  maxConnections,
  acquireTimeoutMs,
  idleTimeoutMs: 60_000,
});

describe('pool settings (DB_POOL_MAX, DB_POOL_ACQUIRE_TIMEOUT_MS, DB_POOL_IDLE_TIMEOUT_MS)', () => {
  afterEach(() => {
    vi.unstubAllEnvs();
    resetSettings();
  });

  it("defaults to the adapter's own where nothing is set (tools, tests)", () => {
    expect(databasePoolFromEnv({})).toEqual(DEFAULT_POOL_SETTINGS);
    expect(DEFAULT_POOL_SETTINGS).toEqual({
      maxConnections: 10,
      acquireTimeoutMs: 5000,
      idleTimeoutMs: 60_000,
    });
  });

  it('reads the three variables, and refuses a bad value by its name at start', () => {
    vi.stubEnv('DB_POOL_MAX', '2');
    vi.stubEnv('DB_POOL_ACQUIRE_TIMEOUT_MS', '3000');
    vi.stubEnv('DB_POOL_IDLE_TIMEOUT_MS', '20000');
    resetSettings();
    expect(getSettings().databasePool).toEqual({
      maxConnections: 2,
      acquireTimeoutMs: 3000,
      idleTimeoutMs: 20_000,
    });
    for (const [name, value] of [
      ['DB_POOL_MAX', '0'],
      ['DB_POOL_MAX', '101'],
      ['DB_POOL_MAX', 'two'],
      // At or past the HTTP API's 30 s, a request would never hear why it got no connection.
      ['DB_POOL_ACQUIRE_TIMEOUT_MS', '30000'],
      ['DB_POOL_IDLE_TIMEOUT_MS', '10'],
    ] as const) {
      expect(() => databasePoolFromEnv({ [name]: value }), `${name}=${value}`).toThrow(name);
    }
  });
});

describe('the driver pool options', () => {
  it('checks a connection by its socket, keeps none open for its own sake, and bounds and times everything', () => {
    expect(poolOptions({ maxConnections: 2, acquireTimeoutMs: 4000, idleTimeoutMs: 30_000 })).toEqual({
      validateConnection: 'socket',
      pool: { min: 0, max: 2, acquireTimeoutMillis: 4000, idleTimeoutMillis: 30_000 },
    });
  });

  it("lets a connection string's Max Pool Size lower the bound, never raise it; Min Pool Size is ignored", () => {
    const target = (extra: string) => ({
      connectionString: `Server=sql.example;User Id=app;Password=pw;${extra}`,
    });
    expect(poolConfig(target('Max Pool Size=100'), settings(2)).pool).toMatchObject({ max: 2, min: 0 });
    expect(poolConfig(target('Max Pool Size=1'), settings(5)).pool).toMatchObject({ max: 1 });
    expect(poolConfig(target('Min Pool Size=3'), settings(2)).pool).toMatchObject({ max: 2, min: 0 });
    expect(poolConfig(target(''), settings(2)).validateConnection).toBe('socket');
  });
});

/** The driver's pool with its connections stood in for: what it lends is whatever `create` makes. */
function standInConnections(create: () => Promise<object>) {
  // mssql's own hooks of its pool (lib/tedious/connection-pool.js): log in, close, check.
  const prototype = sql.ConnectionPool.prototype as unknown as {
    _poolCreate(): Promise<object>;
    _poolDestroy(connection: object): Promise<void>;
    _poolValidate(connection: object): boolean;
  };
  vi.spyOn(prototype, '_poolCreate').mockImplementation(create);
  vi.spyOn(prototype, '_poolDestroy').mockResolvedValue(undefined);
  vi.spyOn(prototype, '_poolValidate').mockReturnValue(true);
}

describe('a pool whose connections are all in use', () => {
  const target = { connectionString: 'mssql://app:pw@sql.example/Erp?pool-test=1' };
  type Lending = sql.ConnectionPool & { acquire(): Promise<object>; release(connection: object): void };

  beforeEach(() => {
    let made = 0;
    standInConnections(async () => ({ connection: ++made }));
  });
  afterEach(async () => {
    await closeSharedPool(target);
    vi.restoreAllMocks();
  });

  it('builds the pool with the owner settings, one pool per owner', async () => {
    const process = (await sharedPool(target)) as unknown as { pool: Record<string, unknown> };
    const instance = (await sharedPool(target, { id: 'f#1', settings: settings(2, 1500) })) as unknown as {
      pool: Record<string, unknown>;
      config: sql.config;
    };
    expect(instance).not.toBe(process);
    expect(await sharedPool(target, { id: 'f#1', settings: settings(2, 1500) })).toBe(instance);
    expect(instance.pool).toMatchObject({
      min: 0,
      max: 2,
      acquireTimeoutMillis: 1500,
      idleTimeoutMillis: 60_000,
    });
    expect(instance.config.validateConnection).toBe('socket');
    expect(process.pool).toMatchObject({ max: 10, acquireTimeoutMillis: 5000 });
  });

  it('fails the statement that waited the whole acquire time-out as busy, not unreachable', async () => {
    const pool = (await sharedPool(target, { id: 'busy', settings: settings(1, 80) })) as Lending;
    const held = await pool.acquire();
    const started = Date.now();
    const failure = await pool.acquire().catch((error: unknown) => error);
    expect(Date.now() - started).toBeGreaterThanOrEqual(70);
    const mapped = mapError(failure);
    expect(mapped).toBeInstanceOf(DatabaseBusyError);
    expect(mapped).toBeInstanceOf(DatabaseUnavailableError);
    expect(mapped).toMatchObject({ maxConnections: 1, waitedMs: 80, retryAfterSeconds: 1 });
    pool.release(held);
    // Freed, it is lent again at once.
    pool.release(await pool.acquire());
  });

  it('fails a wait that ran out while a connection was still logging in as unreachable', async () => {
    const pool = (await sharedPool(target, { id: 'slow', settings: settings(2, 80) })) as Lending;
    const held = await pool.acquire();
    // The second connection's login does not finish in time: one of two in use, the other not there.
    let loggedIn: (connection: object) => void = () => undefined;
    standInConnections(() => new Promise((resolve) => (loggedIn = resolve)));
    const mapped = mapError(await pool.acquire().catch((error: unknown) => error));
    expect(mapped).toBeInstanceOf(DatabaseUnavailableError);
    expect(mapped).not.toBeInstanceOf(DatabaseBusyError);
    expect((mapped as Error).message).toBe(
      'SQL Server is unavailable (no connection within the acquire time-out)',
    );
    loggedIn({ connection: 'late' });
    pool.release(held);
  });
});

describe('the answers to a full pool', () => {
  const busy = new DatabaseBusyError(2, 5000);

  it('Data API: 503 database_busy with Retry-After, in words that say the connections are in use', () => {
    const error = toServiceError(busy);
    expect(error).toMatchObject({
      status: 503,
      code: 'database_busy',
      expose: true,
      headers: { 'retry-after': '5' },
      message: "The tenant database's connections are all in use; try again in 5 s",
    });
    // Unreachable stays what it was, without a promise of when.
    expect(toServiceError(new DatabaseUnavailableError('x'))).toMatchObject({
      code: 'database_unavailable',
      headers: undefined,
    });
  });

  it('Web API: 503/150 with Retry-After, the same words', () => {
    expect(toWebApiError(busy)).toMatchObject({
      errorCode: WebApiErrorCode.databaseUnavailable,
      retryAfterSeconds: 5,
    });
    const { response, code } = renderWebApiError(busy, undefined, 'req-1');
    expect(code).toBe('150');
    expect(response.status).toBe(503);
    expect(response.headers).toMatchObject({ 'retry-after': '5', 'x-request-id': 'req-1' });
    expect(JSON.parse(String(response.body))).toEqual({
      id: null,
      vlResult: -1,
      data: [
        {
          error: [
            {
              errorCode: '150',
              errorMessage: "The tenant database's connections are all in use; try again in 5 s",
            },
          ],
        },
      ],
    });
    expect(
      renderWebApiError(new DatabaseUnavailableError('x'), undefined, 'req-2').response.headers,
    ).not.toHaveProperty('retry-after');
  });
});

describe('function instances', () => {
  afterEach(() => {
    vi.unstubAllEnvs();
    resetSettings();
  });

  it("is the process, with the environment's settings, unless the local stack runs an invocation as an instance", async () => {
    vi.stubEnv('DB_POOL_MAX', '3');
    resetSettings();
    expect(currentFunctionInstance()).toEqual({
      id: '',
      settings: expect.objectContaining({ maxConnections: 3 }),
    });
    const instance = { id: 'dataGetData#1', settings: settings(1) };
    const seen = await runAsFunctionInstance(instance, async () => {
      await new Promise((resolve) => setTimeout(resolve, 1));
      return currentFunctionInstance();
    });
    expect(seen).toBe(instance);
    expect(currentFunctionInstance().id).toBe('');
  });
});
