/**
 * What the core knows of a tenant database: its catalogue types and errors. The connection
 * ({@link Database}) and its {@link SqlDialect} are shared by the SQL adapters
 * (`shared/adapters/mssql`, `shared/adapters/embedded`), which alone write SQL; the core reaches
 * the database only through the ports of its use cases (`DataSourceReader`, `DocumentStore`,
 * `WebApiStore`, `WebhookDeliveryLog`).
 */

/** Logical type of a column, enough to encode values as JSON and to type condition operands. */
export type ColumnKind =
  | 'int'
  | 'decimal'
  | 'float'
  | 'string'
  | 'datetime'
  | 'date'
  | 'time'
  | 'guid'
  | 'binary'
  | 'bool'
  | 'other';

export interface ColumnInfo {
  /** Name exactly as in the catalogue. */
  readonly name: string;
  readonly kind: ColumnKind;
  /** Database type name as the catalogue reports it (`nvarchar`, `timestamp without time zone`, ...). */
  readonly dataType: string;
  readonly ordinal: number;
  /** Whether the column admits NULL (the catalogue's IS_NULLABLE); undefined where not known. */
  readonly nullable?: boolean;
}

export interface DataSourceInfo {
  readonly schema: string;
  readonly name: string;
  readonly kind: 'table' | 'view';
  /** Columns in ordinal order. */
  readonly columns: readonly ColumnInfo[];
  /** Primary key column names in key order; empty for views and tables without one. */
  readonly primaryKey: readonly string[];
  /**
   * The columns a read returns when not all of them (`columns=`), in the order asked; `columns`
   * still decides the order of the rows, so choosing columns never changes which rows come when.
   */
  readonly selected?: readonly ColumnInfo[];
  /**
   * The rows a tenant may read of a table it shares with others: only those whose `column` holds
   * `value`. Every read of the source (rows, pages, counts) adds it as a parameter.
   */
  readonly rowScope?: RowScope;
}

/** Rows of a shared table that belong to one tenant: `column` = `value`. */
export interface RowScope {
  /** The column as the catalogue spells it. */
  readonly column: string;
  readonly value: string;
}

/** A table or view as a catalogue lists it. */
export interface DataSourceName {
  readonly schema: string;
  readonly name: string;
}

export type SqlDialectName = 'mssql' | 'embedded';

export interface SqlDialect {
  readonly name: SqlDialectName;
  /** Quotes an identifier that has already been validated against the catalogue. */
  quoteIdent(name: string): string;
  /** Placeholder for the 1-based parameter `index`. */
  param(index: number): string;
  /** `ORDER BY`-less paging suffix: skip `offsetParam` rows, return `fetchParam` rows. */
  paginate(offsetParam: string, fetchParam: string): string;
}

export type Row = Record<string, unknown>;

export interface QueryOptions {
  /**
   * Cancels the statement in the database when it aborts: the query then rejects with
   * {@link StatementCancelledError}, and the database stops working on it.
   */
  readonly signal?: AbortSignal;
}

/** How a transaction runs. */
export interface TransactionOptions {
  /**
   * The writer's `traceparent` (CONTRACT 8a): put in the transaction's session for its length, so
   * that the change feed's triggers record it with each change the transaction writes, and the
   * notifier's pass that finds the change links to the write.
   */
  readonly writer?: string;
}

export interface Database {
  readonly dialect: SqlDialect;
  /** Runs one parameterised statement and returns its first result set. */
  query(sql: string, params?: readonly unknown[], options?: QueryOptions): Promise<Row[]>;
  /**
   * Runs one parameterised statement and yields its rows in batches of at most `batchSize`,
   * never holding more than one batch in memory.
   */
  streamBatches(
    sql: string,
    params: readonly unknown[],
    batchSize: number,
    options?: QueryOptions,
  ): AsyncIterable<Row[]>;
  /** Looks a table or view up in the catalogue, case-insensitively; undefined when absent. */
  findDataSource(schema: string | undefined, name: string): Promise<DataSourceInfo | undefined>;
  /** Where lookups are remembered: forgets the one of this name; true when there was one. */
  forgetDataSource?(schema: string | undefined, name: string): boolean;
  /** Every table and view of the database outside the system schemas, by schema and name. */
  listDataSources(): Promise<DataSourceName[]>;
  /** Runs `fn` in a transaction on one connection. */
  transaction<T>(
    fn: (tx: Pick<Database, 'query' | 'dialect'>) => Promise<T>,
    options?: TransactionOptions,
  ): Promise<T>;
  close(): Promise<void>;
}

/**
 * The port's errors are recognised by a brand as well as by their class: the local stack with
 * `LOCAL_FUNCTIONS=packaged` hands its embedded databases, built from the sources, to the
 * functions' bundles, which hold copies of these classes of their own. In Lambda there is one copy.
 */
const PORT_ERROR = Symbol.for('erp-integration-gateway:database-port-error');
/** Whether `value` is a port error of class `name` or of a class derived from it (its brand names its lineage). */
const isPortError = (value: unknown, name: string) =>
  value instanceof Error &&
  ((value as Error & { [PORT_ERROR]?: readonly string[] })[PORT_ERROR]?.includes(name) ?? false);

/** Thrown by adapters when the database cannot be reached (mapped to 503). */
export class DatabaseUnavailableError extends Error {
  override readonly name: string = 'DatabaseUnavailableError';
  readonly [PORT_ERROR]: readonly string[] = ['DatabaseUnavailableError'];
  static override [Symbol.hasInstance](value: unknown): boolean {
    return isPortError(value, 'DatabaseUnavailableError');
  }
}

/**
 * Thrown by adapters when a statement waited the whole acquire time-out for one of this process's
 * connections to the database and none came free: the database answers, but every connection this
 * function instance may hold is busy with other statements. Still unavailable (503), but a
 * different answer from "unreachable": nothing is wrong with the server, and trying again shortly
 * is the remedy, so it carries how long to wait.
 */
export class DatabaseBusyError extends DatabaseUnavailableError {
  override readonly name = 'DatabaseBusyError';
  // Also a DatabaseUnavailableError: one way of being unavailable.
  override readonly [PORT_ERROR] = ['DatabaseBusyError', 'DatabaseUnavailableError'];
  static override [Symbol.hasInstance](value: unknown): boolean {
    return isPortError(value, 'DatabaseBusyError');
  }
  constructor(
    /** The connections this process may hold to the database, all of which were in use. */
    readonly maxConnections: number,
    /** How long the statement waited for one, in milliseconds. */
    readonly waitedMs: number,
    options?: ErrorOptions,
  ) {
    super(
      `All ${maxConnections} connection${maxConnections === 1 ? '' : 's'} of this function instance to the tenant database stayed in use for ${waitedMs} ms`,
      options,
    );
  }

  /** Seconds a client should wait before trying again: as long as this statement waited, at least 1. */
  get retryAfterSeconds(): number {
    return Math.max(1, Math.ceil(this.waitedMs / 1000));
  }
}

/**
 * Thrown by adapters when the database answered but no encrypted connection came about: its
 * certificate is not trusted or does not name the server, or it refused or does not offer
 * encryption. Still unavailable (503), but an answer that says why: a wrong CA or name does not
 * go away by trying again. Its message is meant for clients: `problem` is one of the adapter's
 * fixed texts, never the driver's (which names hosts).
 */
export class DatabaseTlsError extends DatabaseUnavailableError {
  override readonly name = 'DatabaseTlsError';
  // Also a DatabaseUnavailableError: one way of being unavailable.
  override readonly [PORT_ERROR] = ['DatabaseTlsError', 'DatabaseUnavailableError'];
  static override [Symbol.hasInstance](value: unknown): boolean {
    return isPortError(value, 'DatabaseTlsError');
  }
  constructor(
    /** What went wrong, e.g. "certificate not trusted (unable to verify the first certificate)". */
    readonly problem: string,
    options?: ErrorOptions,
  ) {
    super(`The tenant database refused or failed the TLS handshake: ${problem}`, options);
  }
}

/** Thrown by adapters when the database rejects a statement (bad data, failed procedure). */
export class DatabaseStatementError extends Error {
  override readonly name = 'DatabaseStatementError';
  readonly [PORT_ERROR]: readonly string[] = ['DatabaseStatementError'];
  static override [Symbol.hasInstance](value: unknown): boolean {
    return isPortError(value, 'DatabaseStatementError');
  }
  constructor(
    message: string,
    /** Driver-specific error code, for logs only. */
    readonly dbCode?: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/**
 * Thrown by adapters when the database refused a statement because the service's login lacks a
 * permission on one of its objects (CONTRACT.md section 7). A 500 that says what to grant: its
 * message is the adapter's own words, meant for the client and the operator (the object and the
 * grant docs/sql-server.md lists for it), never the engine's text. A table or view the login may
 * not read never gets here: the catalogue does not show it, and it is answered like an unknown one.
 */
export class DatabasePermissionError extends Error {
  override readonly name = 'DatabasePermissionError';
  readonly [PORT_ERROR]: readonly string[] = ['DatabasePermissionError'];
  static override [Symbol.hasInstance](value: unknown): boolean {
    return isPortError(value, 'DatabasePermissionError');
  }
  constructor(
    /** The object as the service names it (`dbo.SVCDOC`), for the log and the metric. */
    readonly object: string,
    /** What to grant on it: its permissions as docs/sql-server.md lists them. */
    readonly grant: string,
    /** Driver-specific error code, for logs only. */
    readonly dbCode?: string,
    options?: ErrorOptions,
  ) {
    super(
      `The service's database login may not use ${object}: grant ${grant} on ${object} to the service's role (docs/sql-server.md, "Permissions")`,
      options,
    );
  }
}

/** Thrown by adapters when a statement was cancelled through {@link QueryOptions.signal}. */
export class StatementCancelledError extends Error {
  override readonly name = 'StatementCancelledError';
  readonly [PORT_ERROR]: readonly string[] = ['StatementCancelledError'];
  static override [Symbol.hasInstance](value: unknown): boolean {
    return isPortError(value, 'StatementCancelledError');
  }
}

/**
 * The same database with every `query` and `streamBatches` bound to `signal`, for code that
 * reads through the port without knowing about time limits (a request's reads).
 */
export function cancelledBy(db: Database, signal: AbortSignal | undefined): Database {
  if (!signal) return db;
  return {
    ...db,
    query: (sql, params, options) => db.query(sql, params, { signal, ...options }),
    streamBatches: (sql, params, batchSize, options) =>
      db.streamBatches(sql, params, batchSize, { signal, ...options }),
  };
}
