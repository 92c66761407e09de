/**
 * `POST /_local/erp/writes`: stands in for the ERP writing its own tables of tenant `demo`
 * (CONTRACT.md section 3), so that the change feed can be tried by hand: inserts, updates and
 * deletes of SUBJECT and DOKUMENT rows in one transaction, which may be held open for a while
 * (`holdSeconds`) and may end in a rollback. Two calls at once, the first holding longer, commit
 * in another order than they began. Answers what it changed once the transaction has ended.
 */
import type { Database, DataSourceInfo } from '../../shared/core/database.js';
import { type LocalRoute, type LocalRouteContext, readJsonObject, sendJson } from './local-http.js';

const TABLES = ['SUBJECT', 'DOKUMENT'] as const;
const MAX_WRITES = 100;
const MAX_HOLD_SECONDS = 60;
const MAX_BODY_BYTES = 256 * 1024;

export const ERP_WRITES_SHAPE =
  'The body must be a JSON object like {"writes":[{"table":"SUBJECT","op":"insert","row":{"ID":1001,"NAZEV":"Nový"}},' +
  '{"table":"SUBJECT","op":"update","key":{"ID":1},"set":{"MESTO":"Brno"}},{"table":"DOKUMENT","op":"delete","key":{"ID":5}}],' +
  '"holdSeconds":0,"rollback":false}';

type Value = string | number | boolean | null;
interface Write {
  readonly table: DataSourceInfo;
  readonly op: 'insert' | 'update' | 'delete';
  readonly key: Record<string, Value>;
  readonly values: Record<string, Value>;
}

class BadWrite extends Error {}

const isValue = (value: unknown): value is Value =>
  value === null ||
  typeof value === 'string' ||
  typeof value === 'boolean' ||
  (typeof value === 'number' && Number.isFinite(value));

/** Column names checked against the catalogue, spelled as it spells them. */
function columnsOf(
  table: DataSourceInfo,
  given: unknown,
  what: string,
  index: number,
): Record<string, Value> {
  if (!given || typeof given !== 'object' || Array.isArray(given)) {
    throw new BadWrite(`writes[${index}].${what} must be an object of column names and values`);
  }
  const out: Record<string, Value> = {};
  for (const [name, value] of Object.entries(given)) {
    const column = table.columns.find((c) => c.name.toLowerCase() === name.toLowerCase());
    if (!column)
      throw new BadWrite(`writes[${index}].${what}: ${table.name} has no column "${name.slice(0, 64)}"`);
    if (!isValue(value))
      throw new BadWrite(`writes[${index}].${what}.${column.name} must be a string, number, boolean or null`);
    out[column.name] = value;
  }
  return out;
}

async function parseWrites(db: Database, input: Record<string, unknown>): Promise<Write[]> {
  const { writes } = input;
  if (!Array.isArray(writes) || writes.length === 0 || writes.length > MAX_WRITES) {
    throw new BadWrite(`"writes" must be an array of 1 to ${MAX_WRITES} writes`);
  }
  const tables = new Map<string, DataSourceInfo>();
  for (const name of TABLES) tables.set(name, (await db.findDataSource('dbo', name))!);
  return writes.map((write, index) => {
    if (!write || typeof write !== 'object') throw new BadWrite(`writes[${index}] must be an object`);
    const { table: tableName, op, row, key, set } = write as Record<string, unknown>;
    const table = typeof tableName === 'string' ? tables.get(tableName.toUpperCase()) : undefined;
    if (!table) throw new BadWrite(`writes[${index}].table must be ${TABLES.join(' or ')}`);
    if (op !== 'insert' && op !== 'update' && op !== 'delete') {
      throw new BadWrite(`writes[${index}].op must be insert, update or delete`);
    }
    if (op === 'insert') {
      const values = columnsOf(table, row, 'row', index);
      const missing = table.primaryKey.filter((k) => values[k] === undefined || values[k] === null);
      if (missing.length > 0) throw new BadWrite(`writes[${index}].row needs the key ${missing.join(', ')}`);
      return { table, op, key: {}, values };
    }
    const keyValues = columnsOf(table, key, 'key', index);
    if (
      Object.keys(keyValues).length !== table.primaryKey.length ||
      !table.primaryKey.every((k) => keyValues[k] !== undefined && keyValues[k] !== null)
    ) {
      throw new BadWrite(`writes[${index}].key must give exactly the key ${table.primaryKey.join(', ')}`);
    }
    const values = op === 'update' ? columnsOf(table, set, 'set', index) : {};
    if (op === 'update' && Object.keys(values).length === 0) {
      throw new BadWrite(`writes[${index}].set must name at least one column`);
    }
    return { table, op, key: keyValues, values };
  });
}

/** One write as a parameterised statement of the database's dialect; names come from the catalogue. */
function statement(db: Database, write: Write): { sql: string; params: Value[] } {
  const q = db.dialect.quoteIdent;
  const table = `${q(write.table.schema)}.${q(write.table.name)}`;
  const params: Value[] = [];
  const param = (value: Value) => {
    params.push(value);
    return db.dialect.param(params.length);
  };
  if (write.op === 'insert') {
    const names = Object.keys(write.values);
    const placeholders = names.map((n) => param(write.values[n]!));
    return {
      sql: `INSERT INTO ${table} (${names.map(q).join(', ')}) VALUES (${placeholders.join(', ')})`,
      params,
    };
  }
  const assignments =
    write.op === 'update' ? Object.entries(write.values).map(([n, v]) => `${q(n)} = ${param(v)}`) : [];
  const where = Object.entries(write.key)
    .map(([n, v]) => `${q(n)} = ${param(v)}`)
    .join(' AND ');
  return write.op === 'update'
    ? { sql: `UPDATE ${table} SET ${assignments.join(', ')} WHERE ${where}`, params }
    : { sql: `DELETE FROM ${table} WHERE ${where}`, params };
}

/** Error codes of a row that breaks a constraint (duplicate key, NOT NULL, CHECK, too long, bad value). */
const REFUSED_BY_TABLE = new Set([
  '23505',
  '23502',
  '23514',
  '22001',
  '22P02',
  '22003',
  '2627',
  '2601',
  '515',
  '547',
  '8152',
  '2628',
  '245',
  '8114',
]);

/** The route of `POST /_local/erp/writes` on the demo tenant's database. */
export function erpLocalRoutes(context: LocalRouteContext): [string, LocalRoute][] {
  const db = context.database;
  const writes: LocalRoute = async (request, response) => {
    const body = await readJsonObject(request, response, MAX_BODY_BYTES, ERP_WRITES_SHAPE);
    if (!body) return;
    const hold = body.holdSeconds ?? 0;
    if (typeof hold !== 'number' || !Number.isFinite(hold) || hold < 0 || hold > MAX_HOLD_SECONDS) {
      return sendJson(response, 400, {
        message: `"holdSeconds" must be a number from 0 to ${MAX_HOLD_SECONDS}`,
      });
    }
    const rollback = body.rollback ?? false;
    if (typeof rollback !== 'boolean')
      return sendJson(response, 400, { message: '"rollback" must be true or false' });
    let parsed: Write[];
    try {
      parsed = await parseWrites(db, body);
    } catch (error) {
      if (error instanceof BadWrite) return sendJson(response, 400, { message: error.message });
      throw error;
    }
    const changed: { table: string; op: string; key: Record<string, Value>; rows: number }[] = [];
    try {
      await db.transaction(async (tx) => {
        for (const write of parsed) {
          const { sql, params } = statement(db, write);
          const counted = await tx.query(
            `${sql}${db.dialect.name === 'mssql' ? '; SELECT @@ROWCOUNT AS n' : ' RETURNING 1 AS n'}`,
            params,
          );
          const rows = db.dialect.name === 'mssql' ? Number(counted[0]?.n ?? 0) : counted.length;
          const key =
            write.op === 'insert'
              ? Object.fromEntries(write.table.primaryKey.map((k) => [k, write.values[k]!]))
              : write.key;
          changed.push({ table: write.table.name, op: write.op, key, rows });
        }
        if (hold > 0) await new Promise((wake) => setTimeout(wake, hold * 1000));
        if (rollback) throw new RolledBack();
      });
    } catch (error) {
      const rolledBack = error instanceof RolledBack || (error as Error).cause instanceof RolledBack;
      if (!rolledBack) {
        // The statement's error, or the transaction's around it.
        const code =
          (error as { dbCode?: string }).dbCode ??
          ((error as Error).cause as { dbCode?: string } | undefined)?.dbCode ??
          '';
        if (REFUSED_BY_TABLE.has(code)) {
          return sendJson(response, 400, {
            message: `The database refused write ${changed.length + 1} (a duplicate key, a missing or too long value, or a value the column does not take); nothing was written`,
          });
        }
        throw error;
      }
    }
    sendJson(response, 200, { committed: !rollback, heldSeconds: hold, changed });
  };
  return [['POST /_local/erp/writes', writes]];
}

class RolledBack extends Error {}
