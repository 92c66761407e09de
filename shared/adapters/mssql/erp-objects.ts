/**
 * What the service needs of the objects a tenant's database already has (CONTRACT.md section 7):
 * the ERP's own tables, which it reads and writes but never creates, alters or fills, and the two
 * tables of the Web API the ERP may have before the service (then they must be as the service
 * writes them, since it never alters them). `npm run db:apply` compares this list with the
 * catalogue before it writes anything, and stops naming every object and column that is missing or
 * of another type. docs/sql-server.md prints the list (a unit test holds the two together).
 *
 * The seed's objects only: a real ERP's database has no register of Web API applications (they
 * live in the tenant registry). The ERP's own register, `WS_APPLICATION`, is checked only where a
 * tenant reads its applications from there (`--erp-applications`).
 */
import type { Database } from '../../core/database.js';

/** Type families, by INFORMATION_SCHEMA.COLUMNS.DATA_TYPE. */
const TEXT = ['nvarchar', 'varchar', 'nchar', 'char', 'ntext', 'text'] as const;
const INTEGER = ['int', 'bigint', 'smallint', 'tinyint'] as const;
const FLAG = ['smallint', 'int', 'tinyint', 'bit'] as const;

export interface RequiredColumn {
  readonly name: string;
  /** The DATA_TYPE values that do. */
  readonly types: readonly string[];
}

export interface RequiredObject {
  /** `dbo.NAME`, as the service's statements name it. */
  readonly object: string;
  /** `erp`: the ERP's, required and never created (only `--demo` lays out a demo one where missing).
   * `service`: created by the scripts when missing; when the ERP already has it, it is checked. */
  readonly owner: 'erp' | 'service';
  /** What of the service reads or writes it. */
  readonly usedBy: string;
  /** The `db:apply` option that asks for it, where only some tenants need it. */
  readonly onlyWith?: '--erp-applications';
  readonly columns: readonly RequiredColumn[];
}

const column = (name: string, types: readonly string[]): RequiredColumn => ({ name, types });

/** The document table, which may live in a document database of its own. */
export const DOCUMENT_TABLE = 'dbo.SVCDOC';

/** The table of docs/sql-server.md ("What the ERP owns and what the service owns"), one row an object. */
export function erpObjectsTable(): string[] {
  return ERP_OBJECTS.map(
    (required) =>
      `| \`${required.object}\`${required.onlyWith ? ` (only with \`${required.onlyWith}\`)` : ''} | ${required.owner === 'erp' ? 'the ERP' : 'the service, or the ERP where it has one'} | ${required.columns
        .map((c) => `\`${c.name}\` (${c.types.join(', ')})`)
        .join('; ')} | ${required.usedBy} |`,
  );
}

export const ERP_OBJECTS: readonly RequiredObject[] = [
  {
    object: 'dbo.SVCDOC',
    owner: 'erp',
    usedBy: '`setFile` (inserts), `getFile` (reads); in the document database',
    columns: [
      column('FILEGUID', ['uniqueidentifier']),
      column('FILENAME', TEXT),
      column('CONTENT_TYPE', TEXT),
      column('SIZE_BYTES', INTEGER),
      column('CONTENT', ['varbinary', 'image']),
    ],
  },
  {
    object: 'dbo.WS_APPLICATION',
    owner: 'erp',
    usedBy:
      "the Web API of a tenant whose registry names the ERP's register (`webApi.applications.erpTable`): the application of `x-api-key`, its API hash; read only",
    onlyWith: '--erp-applications',
    columns: [
      column('ID', INTEGER),
      column('API_KEY', TEXT),
      column('API_HASH', TEXT),
      column('AKTIVNI', FLAG),
    ],
  },
  {
    object: 'dbo.SUBJECT',
    owner: 'erp',
    usedBy: "the receipt webhook (the subject's URL and secret); read only",
    columns: [column('ID', INTEGER), column('WEBHOOK_URL', TEXT), column('SECRET_WEBHOOK', TEXT)],
  },
  {
    object: 'dbo.WS_OPERATION',
    owner: 'service',
    usedBy: 'the Web API (`vltyp` → procedure); read only',
    columns: [
      column('VLTYP', INTEGER),
      column('PROCEDURE_NAME', TEXT),
      column('ROW_NAME', TEXT),
      column('AKTIVNI', FLAG),
    ],
  },
  {
    object: 'dbo.WS_JOURNAL',
    owner: 'service',
    usedBy: 'the Web API (every call, the asynchronous jobs); inserts and updates',
    columns: [
      column('ID', INTEGER),
      column('APPLICATION_ID', INTEGER),
      column('VLTYP', INTEGER),
      column('CALL_MODE', TEXT),
      column('STATE', TEXT),
      column('REQUEST', TEXT),
      column('ANSWER', TEXT),
      column('VL_RESULT', INTEGER),
      column('ROW_NAME', TEXT),
      column('ATTEMPTS', INTEGER),
      column('LEASE_UNTIL', ['datetime2', 'datetime']),
      column('REQUEST_ID', TEXT),
      column('CREATED_AT', ['datetime2', 'datetime']),
      column('FINISHED_AT', ['datetime2', 'datetime']),
    ],
  },
];

/** One thing the catalogue lacks, in words a DBA acts on. */
export interface ErpObjectProblem {
  readonly object: string;
  readonly column?: string;
  readonly problem: string;
}

const CATALOGUE = `SELECT t.TABLE_SCHEMA AS [schema], t.TABLE_NAME AS [name], t.TABLE_TYPE AS [kind],
    c.COLUMN_NAME AS [column], c.DATA_TYPE AS [type]
  FROM INFORMATION_SCHEMA.TABLES AS t
  LEFT JOIN INFORMATION_SCHEMA.COLUMNS AS c
    ON c.TABLE_SCHEMA = t.TABLE_SCHEMA AND c.TABLE_NAME = t.TABLE_NAME
  WHERE LOWER(t.TABLE_SCHEMA) = LOWER(@p1) AND LOWER(t.TABLE_NAME) = LOWER(@p2)`;

/** Whether each object is there (the names as the catalogue spells them). */
export interface ErpObjectCheck {
  readonly problems: readonly ErpObjectProblem[];
  /** Objects of the list that are there. */
  readonly present: readonly string[];
}

/**
 * Compares {@link ERP_OBJECTS} with the catalogue of `db`. Missing objects that are not a problem:
 * the service's own (the scripts create them) always, the ERP's only where the demo lays them out
 * (`--demo`); an object of an option only with that option. Reads only.
 */
export async function checkErpObjects(
  db: Pick<Database, 'query'>,
  options: {
    readonly demo: boolean;
    readonly documentsElsewhere?: boolean;
    /** A tenant on this database reads its applications from the ERP's register. */
    readonly erpApplications?: boolean;
    /** Only these of the list (a part of db:apply that needs no others). */
    readonly only?: readonly string[];
  },
): Promise<ErpObjectCheck> {
  const problems: ErpObjectProblem[] = [];
  const present: string[] = [];
  for (const required of ERP_OBJECTS) {
    if (options.only && !options.only.includes(required.object)) continue;
    if (options.documentsElsewhere && required.object === DOCUMENT_TABLE) continue;
    if (required.onlyWith === '--erp-applications' && !options.erpApplications) continue;
    const [schema, name] = required.object.split('.') as [string, string];
    const rows = await db.query(CATALOGUE, [schema, name]);
    if (rows.length === 0) {
      if (required.owner === 'erp' && !options.demo) {
        problems.push({ object: required.object, problem: `table is missing (used by ${required.usedBy})` });
      }
      continue;
    }
    present.push(required.object);
    if (String(rows[0]!.kind).toUpperCase() !== 'BASE TABLE') {
      problems.push({
        object: required.object,
        problem: `is a ${String(rows[0]!.kind).toLowerCase()}, not a table`,
      });
      continue;
    }
    const types = new Map(
      rows
        .filter((row) => row.column != null)
        .map((row) => [String(row.column).toUpperCase(), String(row.type).toLowerCase()]),
    );
    for (const wanted of required.columns) {
      const type = types.get(wanted.name.toUpperCase());
      if (type === undefined) {
        problems.push({
          object: required.object,
          column: wanted.name,
          problem: `column is missing (used by ${required.usedBy})`,
        });
      } else if (!wanted.types.includes(type)) {
        problems.push({
          object: required.object,
          column: wanted.name,
          problem: `is ${type}, the service needs ${wanted.types.join(' or ')}`,
        });
      }
    }
  }
  return { problems, present };
}

/** One line a problem: `dbo.SVCDOC.FILENAME: column is missing (…)`. */
export function describeProblem(problem: ErpObjectProblem): string {
  return `${problem.object}${problem.column ? `.${problem.column}` : ''}: ${problem.problem}`;
}
