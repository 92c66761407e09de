import { EventEmitter } from 'node:events';
import sql from 'mssql';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { declaredViewName, FIND_DATA_SOURCE_SQL } from '../../shared/adapters/mssql/catalogue.js';
import { mapError, parseConnectionString } from '../../shared/adapters/mssql/connection.js';
import { mssqlDialect } from '../../shared/adapters/mssql/dialect.js';
import { createMssqlDatabase, type MssqlPoolLike } from '../../shared/adapters/mssql/index.js';
import { columnKind, type MssqlColumns } from '../../shared/adapters/mssql/types.js';
import {
  DatabaseStatementError,
  DatabaseUnavailableError,
  type Row,
  StatementCancelledError,
} from '../../shared/core/database.js';

interface Input {
  name: string;
  type: string;
  length?: number;
  precision?: number;
  scale?: number;
  value: unknown;
}

type Result = { recordset?: Row[] & { columns?: MssqlColumns } };

/** Records inputs and SQL; `respond` decides what `query` does (resolve, reject, or stream events). */
class FakeRequest extends EventEmitter {
  stream = false;
  inputs: Input[] = [];
  sql = '';
  paused = false;
  pauses = 0;
  cancelled = false;
  emitted = 0;

  constructor(
    readonly origin: 'pool' | 'tx',
    private readonly respond: (request: FakeRequest) => Promise<Result>,
  ) {
    super();
  }

  input(name: string, type: sql.ISqlType, value: unknown) {
    const { type: factory, ...size } = type as sql.ISqlType & Record<string, number>;
    this.inputs.push({ name, type: (factory as { declaration: string }).declaration, ...size, value });
    return this;
  }

  query(text: string) {
    this.sql = text;
    return this.respond(this);
  }

  pause() {
    this.paused = true;
    this.pauses += 1;
  }

  resume() {
    this.paused = false;
    this.emit('resumed');
  }

  cancel() {
    this.cancelled = true;
    this.emit('resumed');
  }

  /** Emits rows one per tick like tedious, honouring pause(); `slack` rows still arrive after a pause. */
  async play(columns: MssqlColumns, rows: Row[], slack = 0): Promise<Result> {
    await Promise.resolve();
    this.emit('recordset', columns);
    let overrun = 0;
    for (const row of rows) {
      if (this.paused && overrun >= slack) await new Promise((resolve) => this.once('resumed', resolve));
      if (this.paused) overrun += 1;
      else overrun = 0;
      if (this.cancelled) {
        this.emit('error', new sql.RequestError('Canceled.', 'ECANCEL'));
        break;
      }
      this.emitted += 1;
      this.emit('row', row);
      await new Promise((resolve) => setImmediate(resolve));
    }
    this.emit('done', {});
    return {};
  }
}

function recordset(rows: Row[], columns: MssqlColumns = {}): Result {
  return { recordset: Object.assign([...rows], { columns }) };
}

function fakePool(respond: (request: FakeRequest) => Promise<Result> = async () => recordset([])) {
  const requests: FakeRequest[] = [];
  const tx = { begun: 0, committed: 0, rolledBack: 0, rollbackFails: false };
  const newRequest = (origin: 'pool' | 'tx') => {
    const request = new FakeRequest(origin, respond);
    requests.push(request);
    return request;
  };
  const pool = {
    closed: 0,
    request: () => newRequest('pool'),
    transaction: () => ({
      begin: async () => {
        tx.begun += 1;
      },
      commit: async () => {
        tx.committed += 1;
      },
      rollback: async () => {
        tx.rolledBack += 1;
        if (tx.rollbackFails) throw new sql.TransactionError('Transaction has not begun.', 'ENOTBEGUN');
      },
      request: () => newRequest('tx'),
    }),
    close: async () => {
      pool.closed += 1;
    },
  } satisfies MssqlPoolLike & { closed: number };
  return { pool, requests, tx };
}

const CONNECTION = 'mssql://sa:hunter2@db.internal:1433/erp';

describe('query parameters', () => {
  it('binds @p1..@pN with types chosen from the values', async () => {
    const { pool, requests } = fakePool();
    const db = createMssqlDatabase({ connectionString: CONNECTION, pool });
    const when = new Date('2024-05-06T07:08:09.123Z');
    const bytes = new Uint8Array([1, 2, 3]);
    await db.query('SELECT 1', [
      'abc',
      'x'.repeat(4001),
      42,
      2 ** 40,
      1.5,
      when,
      Buffer.from('hi'),
      bytes,
      null,
      undefined,
      true,
      10n,
    ]);
    const inputs = requests[0]!.inputs;
    expect(inputs.map((input) => input.name)).toEqual(inputs.map((_, index) => `p${index + 1}`));
    expect(inputs.map(({ type, length }) => (length === undefined ? type : `${type}(${length})`))).toEqual([
      'nvarchar(4000)',
      `nvarchar(${sql.MAX})`,
      'int',
      'bigint',
      'float',
      'datetime2',
      `varbinary(${sql.MAX})`,
      `varbinary(${sql.MAX})`,
      'nvarchar(4000)',
      'nvarchar(4000)',
      'bit',
      'bigint',
    ]);
    expect(inputs[5]!.value).toBe(when);
    expect(Buffer.isBuffer(inputs[7]!.value)).toBe(true);
    expect(inputs[9]!.value).toBeNull();
  });

  it('honours explicit typed parameters', async () => {
    const { pool, requests } = fakePool();
    const db = createMssqlDatabase({ connectionString: CONNECTION, pool });
    const guid = '6F9619FF-8B86-D011-B42D-00C04FC964FF';
    await db.query('SELECT 1', [
      { type: 'uniqueidentifier', value: guid },
      { type: 'varbinary', value: new Uint8Array([9]) },
      { type: 'decimal', value: '12.345' },
      { type: 'decimal', value: 1, precision: 10, scale: 4 },
      { type: 'bigint', value: '9007199254740993' },
      { type: 'nvarchar', value: 'n' },
    ]);
    expect(requests[0]!.inputs).toMatchObject([
      { type: 'uniqueidentifier', value: guid },
      { type: 'varbinary', length: sql.MAX },
      { type: 'decimal', precision: 38, scale: 3, value: '12.345' },
      { type: 'decimal', precision: 10, scale: 4, value: 1 },
      { type: 'bigint', value: '9007199254740993' },
      { type: 'nvarchar', length: 4000, value: 'n' },
    ]);
  });

  it('rejects values SQL Server cannot take', async () => {
    const db = createMssqlDatabase({ connectionString: CONNECTION, pool: fakePool().pool });
    await expect(db.query('SELECT 1', [{ nested: true }])).rejects.toThrow(TypeError);
    await expect(db.query('SELECT 1', [{ type: 'xml', value: '<a/>' }])).rejects.toThrow(TypeError);
  });
});

describe('query results', () => {
  it('returns the first record set, or [] when there is none', async () => {
    const rows = [{ a: 1 }];
    const db = createMssqlDatabase({
      connectionString: CONNECTION,
      pool: fakePool(async (request) => (request.sql.startsWith('SELECT') ? recordset(rows) : {})).pool,
    });
    expect(await db.query('SELECT a FROM t')).toEqual(rows);
    expect(await db.query('UPDATE t SET a = 1')).toEqual([]);
  });

  it('upper-cases GUIDs and turns safe bigints into numbers', async () => {
    const columns = {
      Id: { type: sql.UniqueIdentifier },
      Big: { type: sql.BigInt },
      Name: { type: sql.NVarChar },
    };
    const db = createMssqlDatabase({
      connectionString: CONNECTION,
      pool: fakePool(async () =>
        recordset(
          [
            { Id: '6f9619ff-8b86-d011-b42d-00c04fc964ff', Big: '42', Name: 'abc' },
            { Id: null, Big: '9007199254740993', Name: 'def' },
          ],
          columns,
        ),
      ).pool,
    });
    expect(await db.query('SELECT * FROM t')).toEqual([
      { Id: '6F9619FF-8B86-D011-B42D-00C04FC964FF', Big: 42, Name: 'abc' },
      { Id: null, Big: '9007199254740993', Name: 'def' },
    ]);
  });
});

describe('findDataSource', () => {
  const catalogueRows = [
    {
      schemaName: 'dbo',
      objectName: 'Orders',
      objectType: 'U',
      columnName: 'Id',
      dataType: 'int',
      isNullable: 'NO',
      keyOrdinal: 2,
    },
    {
      schemaName: 'dbo',
      objectName: 'Orders',
      objectType: 'U',
      columnName: 'Tenant',
      dataType: 'uniqueidentifier',
      isNullable: 'NO',
      keyOrdinal: 1,
    },
    {
      schemaName: 'dbo',
      objectName: 'Orders',
      objectType: 'U',
      columnName: 'Amount',
      dataType: 'money',
      isNullable: 'YES',
      keyOrdinal: null,
    },
    {
      schemaName: 'dbo',
      objectName: 'Orders',
      objectType: 'U',
      columnName: 'Placed',
      dataType: 'datetime2',
      keyOrdinal: null,
    },
  ];

  it('sends one parameterised catalogue query and maps kinds and key order', async () => {
    const { pool, requests } = fakePool(async () => recordset(catalogueRows));
    const db = createMssqlDatabase({ connectionString: CONNECTION, pool });
    const info = await db.findDataSource(undefined, 'orders');
    expect(requests[0]!.sql).toBe(FIND_DATA_SOURCE_SQL);
    expect(requests[0]!.sql).not.toMatch(/orders/i);
    expect(requests[0]!.sql).toMatch(/LOWER\(t\.TABLE_NAME\) = LOWER\(@p1\)/);
    expect(requests[0]!.sql).toMatch(/LOWER\(t\.TABLE_SCHEMA\) = LOWER\(@p2\)/);
    expect(requests[0]!.inputs).toEqual([
      { name: 'p1', type: 'nvarchar', length: 4000, value: 'orders' },
      { name: 'p2', type: 'nvarchar', length: 4000, value: null },
    ]);
    expect(info).toEqual({
      schema: 'dbo',
      name: 'Orders',
      kind: 'table',
      columns: [
        { name: 'Id', kind: 'int', dataType: 'int', ordinal: 1, nullable: false },
        { name: 'Tenant', kind: 'guid', dataType: 'uniqueidentifier', ordinal: 2, nullable: false },
        { name: 'Amount', kind: 'decimal', dataType: 'money', ordinal: 3, nullable: true },
        // What the catalogue does not say is not taken for "may be NULL".
        { name: 'Placed', kind: 'datetime', dataType: 'datetime2', ordinal: 4, nullable: false },
      ],
      primaryKey: ['Tenant', 'Id'],
    });
  });

  it('passes the schema as a parameter, detects views and returns undefined when absent', async () => {
    const view = [
      {
        schemaName: 'Sales',
        objectName: 'OpenOrders',
        objectType: 'V',
        columnName: 'Id',
        dataType: 'int',
        keyOrdinal: null,
      },
    ];
    const { pool, requests } = fakePool(async (request) =>
      recordset(request.inputs[0]!.value === 'missing' ? [] : view),
    );
    const db = createMssqlDatabase({ connectionString: CONNECTION, pool });
    expect(await db.findDataSource('sales', 'openorders')).toMatchObject({
      schema: 'Sales',
      name: 'OpenOrders',
      kind: 'view',
      primaryKey: [],
    });
    expect(requests[0]!.inputs.map((input) => input.value)).toEqual(['openorders', 'sales']);
    expect(requests[0]!.sql).not.toMatch(/sales/i);
    expect(await db.findDataSource('dbo', 'missing')).toBeUndefined();
  });

  it.each([
    ['int', 'int'],
    ['BIGINT', 'int'],
    ['tinyint', 'int'],
    ['numeric', 'decimal'],
    ['smallmoney', 'decimal'],
    ['real', 'float'],
    ['ntext', 'string'],
    ['xml', 'string'],
    ['smalldatetime', 'datetime'],
    ['datetimeoffset', 'datetime'],
    ['date', 'date'],
    ['time', 'time'],
    ['uniqueidentifier', 'guid'],
    ['timestamp', 'binary'],
    ['image', 'binary'],
    ['bit', 'bool'],
    ['geography', 'other'],
    ['constructor', 'other'],
  ])('maps %s to %s', (dataType, kind) => {
    expect(columnKind(dataType)).toBe(kind);
  });
});

describe('cancellation', () => {
  /** A statement that runs until the server is told to stop (tedious rejects with ECANCEL then). */
  const untilCancelled = (request: FakeRequest) =>
    new Promise<Result>((_resolve, reject) => {
      request.once('resumed', () => reject(new sql.RequestError('Canceled.', 'ECANCEL')));
    });

  it('cancels the running request on the server when the signal aborts', async () => {
    const { pool, requests } = fakePool(untilCancelled);
    const db = createMssqlDatabase({ connectionString: CONNECTION, pool });
    const cancellation = new AbortController();
    const running = db.query('EXEC dbo.WS_OP_SLEEP @params = @p1', ['[]'], { signal: cancellation.signal });
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(requests[0]!.sql).toMatch(/^EXEC/);
    cancellation.abort();
    const error = await running.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StatementCancelledError);
    expect(requests[0]!.cancelled).toBe(true);
  });

  it('sends nothing when the signal has already aborted, and leaves a finished request alone', async () => {
    const { pool, requests } = fakePool(async () => recordset([{ a: 1 }]));
    const db = createMssqlDatabase({ connectionString: CONNECTION, pool });
    const cancellation = new AbortController();
    expect(await db.query('SELECT 1 AS a', [], { signal: cancellation.signal })).toEqual([{ a: 1 }]);
    cancellation.abort();
    expect(requests[0]!.cancelled).toBe(false);
    await expect(db.query('SELECT 1', [], { signal: cancellation.signal })).rejects.toBeInstanceOf(
      StatementCancelledError,
    );
    expect(requests.map((request) => request.sql)).toEqual(['SELECT 1 AS a', '']);
  });
});

describe('transaction', () => {
  it('runs queries on the transaction and commits', async () => {
    const { pool, requests, tx } = fakePool(async () => recordset([{ n: 1 }]));
    const db = createMssqlDatabase({ connectionString: CONNECTION, pool });
    const result = await db.transaction(async (t) => {
      expect(t.dialect).toBe(mssqlDialect);
      return t.query('UPDATE t SET n = @p1', [1]);
    });
    expect(result).toEqual([{ n: 1 }]);
    expect(requests.map((request) => request.origin)).toEqual(['tx']);
    expect(tx).toMatchObject({ begun: 1, committed: 1, rolledBack: 0 });
  });

  it('rolls back and rethrows the original error, mapped', async () => {
    const { pool, tx } = fakePool(async () => {
      throw Object.assign(new sql.RequestError('Violation of PRIMARY KEY constraint', 'EREQUEST'), {
        number: 2627,
      });
    });
    tx.rollbackFails = true;
    const db = createMssqlDatabase({ connectionString: CONNECTION, pool });
    const failure = db.transaction((t) => t.query('INSERT INTO t VALUES (@p1)', [1]));
    await expect(failure).rejects.toBeInstanceOf(DatabaseStatementError);
    await expect(failure).rejects.toMatchObject({
      dbCode: '2627',
      message: 'Violation of PRIMARY KEY constraint',
    });
    expect(tx).toMatchObject({ begun: 1, committed: 0, rolledBack: 1 });

    const boom = new Error('application failure');
    await expect(db.transaction(async () => Promise.reject(boom))).rejects.toBe(boom);
    expect(tx.rolledBack).toBe(2);
  });
});

describe('error mapping', () => {
  it('turns connection failures into DatabaseUnavailableError without connection details', async () => {
    const original = new sql.ConnectionError(
      'Failed to connect to db.internal:1433 as sa/hunter2',
      'ESOCKET',
    );
    const db = createMssqlDatabase({
      connectionString: CONNECTION,
      pool: fakePool(async () => Promise.reject(original)).pool,
    });
    const error = await db.query('SELECT 1').catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(DatabaseUnavailableError);
    expect((error as Error).message).not.toMatch(/db\.internal|hunter2|sa\//);
    expect((error as Error).cause).toBe(original);
  });

  it('maps timeouts and logins to unavailable, statement errors to DatabaseStatementError', () => {
    expect(
      mapError(new sql.RequestError('Timeout: Request failed to complete in 15000ms', 'ETIMEOUT')),
    ).toBeInstanceOf(DatabaseUnavailableError);
    expect(mapError(new sql.ConnectionError("Login failed for user 'sa'.", 'ELOGIN'))).toMatchObject({
      name: 'DatabaseUnavailableError',
      message: 'SQL Server is unavailable (ELOGIN)',
    });
    expect(
      mapError(Object.assign(new Error('operation timed out'), { name: 'TimeoutError' })),
    ).toBeInstanceOf(DatabaseUnavailableError);
    const statement = mapError(
      Object.assign(new sql.RequestError("Invalid object name 'x'.", 'EREQUEST'), { number: 208 }),
    );
    expect(statement).toBeInstanceOf(DatabaseStatementError);
    expect(statement).toMatchObject({ dbCode: '208', message: "Invalid object name 'x'." });
    // Babelfish's untranslated PostgreSQL overflow carries SQL Server's number for it (8115).
    const overflow = mapError(
      Object.assign(new sql.RequestError('numeric field overflow', 'EREQUEST'), { number: 33557097 }),
    );
    expect(overflow).toMatchObject({ dbCode: '8115' });
    // And a column or table that is not there, SQL Server's 207 and 208.
    const babelfish = (message: string) =>
      mapError(Object.assign(new sql.RequestError(message, 'EREQUEST'), { number: 33557097 }));
    expect(babelfish('column "nope" does not exist')).toMatchObject({ dbCode: '207' });
    expect(babelfish('relation "demo_dbo.nope" does not exist')).toMatchObject({ dbCode: '208' });
    const other = mapError(
      Object.assign(new sql.RequestError('something else', 'EREQUEST'), { number: 33557097 }),
    );
    expect(other).toMatchObject({ dbCode: '33557097' });
    const plain = new TypeError('bug');
    expect(mapError(plain)).toBe(plain);
  });
});

describe('streamBatches', () => {
  const columns = { Id: { type: sql.UniqueIdentifier }, N: { type: sql.Int } };
  const rows = (count: number) =>
    Array.from({ length: count }, (_, index) => ({
      Id: `0000000${index}-aaaa-bbbb-cccc-dddddddddddd`,
      N: index,
    }));

  it('yields batches of at most batchSize, pausing so one batch is held at a time', async () => {
    const { pool, requests } = fakePool((request) => request.play(columns, rows(7)));
    const db = createMssqlDatabase({ connectionString: CONNECTION, pool });
    const sizes: number[] = [];
    const emittedAtYield: number[] = [];
    for await (const batch of db.streamBatches('SELECT * FROM t WHERE n > @p1', [0], 3)) {
      sizes.push(batch.length);
      emittedAtYield.push(requests[0]!.emitted);
      expect(batch[0]!.Id).toMatch(/AAAA-BBBB/);
      // A slow consumer: the paused request must not run ahead.
      await new Promise((resolve) => setTimeout(resolve, 5));
      expect(requests[0]!.emitted).toBe(emittedAtYield.at(-1));
    }
    const request = requests[0]!;
    expect(sizes).toEqual([3, 3, 1]);
    expect(emittedAtYield).toEqual([3, 6, 7]);
    expect(request.stream).toBe(true);
    expect(request.pauses).toBe(2);
    expect(request.inputs).toEqual([{ name: 'p1', type: 'int', value: 0 }]);
    expect(request.cancelled).toBe(false);
  });

  it('cuts rows that arrive after a pause into batches of batchSize', async () => {
    const { pool } = fakePool((request) => request.play(columns, rows(10), 2));
    const db = createMssqlDatabase({ connectionString: CONNECTION, pool });
    const sizes: number[] = [];
    for await (const batch of db.streamBatches('SELECT * FROM t', [], 4)) sizes.push(batch.length);
    expect(sizes.every((size) => size <= 4)).toBe(true);
    expect(sizes.reduce((sum, size) => sum + size, 0)).toBe(10);
  });

  it('cancels the request when the consumer stops early', async () => {
    const { pool, requests } = fakePool((request) => request.play(columns, rows(100)));
    const db = createMssqlDatabase({ connectionString: CONNECTION, pool });
    for await (const batch of db.streamBatches('SELECT * FROM t', [], 5)) {
      expect(batch).toHaveLength(5);
      break;
    }
    expect(requests[0]!.cancelled).toBe(true);
    // The cancellation's 'error' event lands on the adapter's listener, not on the process.
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(requests[0]!.emitted).toBeLessThan(100);
  });

  it('cancels a stream on the server when its signal aborts, between batches', async () => {
    const { pool, requests } = fakePool((request) => request.play(columns, rows(100)));
    const db = createMssqlDatabase({ connectionString: CONNECTION, pool });
    const deadline = new AbortController();
    const seen: number[] = [];
    const reading = (async () => {
      for await (const batch of db.streamBatches('SELECT * FROM t', [], 5, { signal: deadline.signal })) {
        seen.push(batch.length);
        if (seen.length === 2) deadline.abort();
        await new Promise((resolve) => setTimeout(resolve, 1));
      }
    })();
    await expect(reading).rejects.toBeInstanceOf(StatementCancelledError);
    expect(requests[0]!.cancelled).toBe(true);
    expect(seen.length).toBeLessThanOrEqual(3);
    expect(requests[0]!.emitted).toBeLessThan(100);
  });

  it('maps an error raised mid-stream', async () => {
    const { pool } = fakePool(async (request) => {
      await Promise.resolve();
      request.emit('row', { N: 1 });
      request.emit(
        'error',
        Object.assign(new sql.RequestError('Divide by zero error encountered.', 'EREQUEST'), {
          number: 8134,
        }),
      );
      request.emit('done', {});
      return {};
    });
    const db = createMssqlDatabase({ connectionString: CONNECTION, pool });
    const consume = async () => {
      for await (const _ of db.streamBatches('SELECT 1/0', [], 10)) {
        // drain
      }
    };
    await expect(consume()).rejects.toMatchObject({ name: 'DatabaseStatementError', dbCode: '8134' });
  });

  it('rejects a batch size below one', async () => {
    const db = createMssqlDatabase({ connectionString: CONNECTION, pool: fakePool().pool });
    await expect(db.streamBatches('SELECT 1', [], 0)[Symbol.asyncIterator]().next()).rejects.toThrow(
      RangeError,
    );
  });
});

describe('connection strings and the shared pool', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('parses the URL form', () => {
    expect(
      parseConnectionString(
        'mssql://app%40erp:p%3Ass@sql.example:14330/Erp?encrypt=true&trustServerCertificate=false',
      ),
    ).toEqual({
      server: 'sql.example',
      port: 14330,
      user: 'app@erp',
      password: 'p:ss',
      database: 'Erp',
      requestTimeout: 0,
      // Encryption asked for: a server answering that it has none gets no login (tls unit tests).
      beforeConnect: expect.any(Function),
      // A cancel not acknowledged within a second closes the connection (Babelfish acknowledges late);
      // the server shows the sessions under the service's name.
      options: {
        cancelTimeout: 1000,
        appName: 'erp-integration-gateway',
        encrypt: true,
        trustServerCertificate: false,
        useUTC: true,
      },
    });
  });

  it("names the sessions after the service, or as the connection string's Application Name says", () => {
    const appName = (text: string) => parseConnectionString(text).options?.appName;
    expect(appName('Server=sql.example;User Id=app;Password=pw')).toBe('erp-integration-gateway');
    expect(appName('Server=sql.example;User Id=app;Password=pw;Application Name=Gateway Prod')).toBe(
      'Gateway Prod',
    );
    expect(appName('Server=sql.example;User Id=app;Password=pw;App=gw')).toBe('gw');
    expect(appName('mssql://app:pw@sql.example/Erp?appName=gw-url')).toBe('gw-url');
  });

  it("leaves statement time limits to the service's own cancellation unless the string sets one", () => {
    expect(parseConnectionString('mssql://app:pw@sql.example/Erp').requestTimeout).toBe(0);
    expect(parseConnectionString('Server=sql.example;User Id=app;Password=pw').requestTimeout).toBe(0);
    expect(parseConnectionString('mssql://app:pw@sql.example/Erp?requestTimeout=60000').requestTimeout).toBe(
      60_000,
    );
    expect(
      parseConnectionString('Server=sql.example;User Id=app;Password=pw;Request Timeout=45000')
        .requestTimeout,
    ).toBe(45_000);
  });

  it('parses the ADO form', () => {
    expect(
      parseConnectionString('Server=sql.example,1433;Database=Erp;User Id=app;Password=secret;Encrypt=true'),
    ).toMatchObject({
      server: 'sql.example',
      port: 1433,
      database: 'Erp',
      user: 'app',
      password: 'secret',
      options: { cancelTimeout: 1000, encrypt: true, useUTC: true },
    });
  });

  it('does not echo an invalid connection string', () => {
    expect(() => parseConnectionString('mssql://sa:hunter2@[bad')).toThrow(
      /^Invalid SQL Server connection string$/,
    );
  });

  it('connects lazily once per connection string and retries after a failed connection', async () => {
    const { pool, requests } = fakePool(async () => recordset([{ ok: 1 }]));
    const connect = vi
      // connect() is overloaded; the spy only needs its promise form.
      .spyOn(sql.ConnectionPool.prototype as unknown as { connect(): Promise<unknown> }, 'connect')
      .mockRejectedValueOnce(new sql.ConnectionError('Failed to connect to sql.example:1433', 'ESOCKET'))
      .mockResolvedValue(pool);
    const connectionString = 'mssql://app:secret@sql.example/Erp?cache-test=1';
    const first = createMssqlDatabase({ connectionString });
    const second = createMssqlDatabase({ connectionString });
    expect(connect).not.toHaveBeenCalled();

    await expect(first.query('SELECT 1')).rejects.toBeInstanceOf(DatabaseUnavailableError);
    expect(await first.query('SELECT 1')).toEqual([{ ok: 1 }]);
    expect(await second.query('SELECT 2')).toEqual([{ ok: 1 }]);
    expect(connect).toHaveBeenCalledTimes(2);
    expect(requests.map((request) => request.sql)).toEqual(['SELECT 1', 'SELECT 2']);

    await first.close();
    expect(pool.closed).toBe(1);
    await second.query('SELECT 3');
    expect(connect).toHaveBeenCalledTimes(3);
  });
});

describe("A view's declared name (Babelfish's catalogue lower-cases it)", () => {
  it('takes the case of the definition when it names the same view, whatever its quoting and comments', () => {
    expect(declaredViewName('v_dokument_soubor', 'CREATE VIEW dbo.V_DOKUMENT_SOUBOR\nAS SELECT 1')).toBe(
      'V_DOKUMENT_SOUBOR',
    );
    expect(declaredViewName('v', '/* x */\n-- y\ncreate   view [dbo] . [V] AS SELECT 1')).toBe('V');
    expect(declaredViewName('my view', 'CREATE OR ALTER VIEW "My View" AS SELECT 1')).toBe('My View');
  });

  it('keeps the catalogue name for a table, another name, or no definition', () => {
    expect(declaredViewName('abc', 'CREATE VIEW dbo.XYZ AS SELECT 1')).toBe('abc');
    expect(declaredViewName('DOKUMENT', null)).toBe('DOKUMENT');
    expect(declaredViewName('v', 'SELECT 1')).toBe('v');
  });
});
