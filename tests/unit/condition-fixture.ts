/**
 * Shared fixture of the condition tests: the catalogue of a small table, the PGlite script that
 * creates it, a PGlite database with it for a suite, and a checker that tokenises compiled SQL against an allowlist.
 */
import { PGlite } from '@electric-sql/pglite';
import { afterAll, beforeAll, expect } from 'vitest';
import type { ColumnInfo, ColumnKind, SqlDialect } from '../../shared/core/database.js';

const column = (name: string, kind: ColumnKind, dataType: string, ordinal: number): ColumnInfo => ({
  name,
  kind,
  dataType,
  ordinal,
});

export const COLUMNS: readonly ColumnInfo[] = [
  column('ID', 'int', 'integer', 1),
  column('NAZEV', 'string', 'character varying', 2),
  column('CENA', 'decimal', 'numeric', 3),
  column('DATUM', 'datetime', 'timestamp without time zone', 4),
  column('DEN', 'date', 'date', 5),
  column('GUID', 'guid', 'uuid', 6),
  column('AKTIVNI', 'int', 'smallint', 7),
  column('POZN', 'string', 'character varying', 8),
  column('CAS', 'time', 'time without time zone', 9),
  column('HOTOVO', 'bool', 'boolean', 10),
  column('MNOZSTVI', 'float', 'double precision', 11),
  column('Mixed Case', 'string', 'character varying', 12),
  column('DATA', 'binary', 'bytea', 13),
];

export const GUID_1 = 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11';
export const GUID_2 = 'b1ffcd00-0d1c-4ef8-bb6d-6bb9bd380a22';

export async function createTable(db: PGlite): Promise<void> {
  await db.exec(`
    CREATE SCHEMA dbo;
    CREATE TABLE dbo."T" (
      "ID" integer PRIMARY KEY,
      "NAZEV" varchar(50),
      "CENA" numeric(15,2),
      "DATUM" timestamp(0),
      "DEN" date,
      "GUID" uuid,
      "AKTIVNI" smallint,
      "POZN" varchar(50),
      "CAS" time(0),
      "HOTOVO" boolean,
      "MNOZSTVI" double precision,
      "Mixed Case" varchar(20),
      "DATA" bytea
    );
    INSERT INTO dbo."T" VALUES
      (1, 'Alfa', 1234.50, '2024-01-15 10:30:00', '2024-01-15', '${GUID_1}', 1, 'první', '08:00:00', true, 1.5, 'm1', '\\x01'),
      (2, 'Beta', 99.99, '2024-02-29 23:59:59', '2024-02-29', '${GUID_2}', 0, NULL, '12:30:00', false, 0, NULL, NULL),
      (3, 'gama 50%', 0.00, '2023-12-31 23:00:00', '2023-12-31', NULL, 1, 'a_b', NULL, NULL, NULL, NULL, NULL),
      (4, 'Delta  ', NULL, NULL, NULL, NULL, NULL, '[x]', NULL, NULL, NULL, NULL, NULL),
      (5, 'ALFA-2', -15.75, '2025-06-01 00:00:00', '2025-06-01', NULL, 1, NULL, '23:59:59', NULL, 2.25, NULL, NULL);
  `);
}

/**
 * A PGlite database with the fixture table for the enclosing suite: created before its tests and
 * closed after them. Returns a getter, as the database exists only once the suite has started.
 */
export function useTableDatabase(): () => PGlite {
  let db: PGlite;
  beforeAll(async () => {
    db = new PGlite();
    await createTable(db);
  }, 30_000);
  afterAll(async () => {
    await db.close();
  });
  return () => db;
}

const WORDS = new Set(
  `AND OR NOT LIKE ILIKE ESCAPE IN BETWEEN IS NULL CAST AS CONVERT EXTRACT FROM
  ISNULL COALESCE UPPER LOWER LTRIM RTRIM TRIM LEN SUBSTRING LEFT RIGHT YEAR MONTH DAY GETDATE
  DATEADD DATEDIFF ABS ROUND LENGTH SUBSTR LOCALTIMESTAMP MAKE_INTERVAL TRUNC FLOOR TO_CHAR TO_TIMESTAMP
  YEARS MONTHS WEEKS DAYS HOURS MINS SECS QUARTER DOW HOUR MINUTE SECOND DAYOFYEAR WEEK WEEKDAY
  COLLATE RTRIM RPAD CASE WHEN THEN ELSE END
  INT BIGINT SMALLINT TINYINT BIT DECIMAL NUMERIC FLOAT REAL MONEY VARCHAR NVARCHAR CHAR NCHAR DATE
  DATETIME DATETIME2 TIME UNIQUEIDENTIFIER MAX INTEGER TEXT TIMESTAMP UUID BOOLEAN DOUBLE PRECISION`.split(
    /\s+/,
  ),
);

const OPERATORS = /^(?:<>|<=|>=|=>|\|\||!~\*|~\*|[=<>+\-*/%(),])/;

/**
 * Checks compiled SQL: no `;`, comments or quotes; only catalogue identifiers, the dialect's
 * placeholders (exactly one per parameter, numbered from `first`), integers and allowlisted
 * words and operators.
 */
export function checkCompiled(
  sql: string,
  params: readonly unknown[],
  dialect: SqlDialect,
  columns: readonly ColumnInfo[] = COLUMNS,
  first = 1,
): void {
  expect(sql).not.toMatch(/;|--|\/\*/);
  expect(sql).not.toContain("'");
  const identifiers = new Set(columns.map((c) => dialect.quoteIdent(c.name)));
  // The one collation the PostgreSQL translation names (text ordered as under SQL Server).
  if (dialect.name === 'embedded') identifiers.add('"und-x-icu"');
  const ident = dialect.name === 'mssql' ? /^\[(?:[^\]]|\]\])*\]/ : /^"(?:[^"]|"")*"/;
  const placeholder = dialect.name === 'mssql' ? /^@p(\d+)/ : /^\$(\d+)/;
  const seen: number[] = [];
  /** Each token class of the output, with a check of the matched text. */
  const rules: [RegExp, (match: RegExpExecArray) => void][] = [
    [/^\s+/, () => {}],
    [
      ident,
      (m) => {
        if (!identifiers.has(m[0])) throw new Error(`Identifier ${m[0]} is not a column in: ${sql}`);
      },
    ],
    [placeholder, (m) => void seen.push(Number(m[1]))],
    // integers: type lengths and constants of the translations
    [/^\d+\b/, () => {}],
    [
      /^[A-Za-z_][A-Za-z0-9_]*/,
      (m) => {
        if (!WORDS.has(m[0].toUpperCase())) throw new Error(`Word ${m[0]} is not allowed in: ${sql}`);
      },
    ],
    [OPERATORS, () => {}],
  ];
  let rest = sql;
  while (rest.length > 0) {
    let length = 0;
    for (const [pattern, check] of rules) {
      const match = pattern.exec(rest);
      if (!match) continue;
      check(match);
      length = match[0].length;
      break;
    }
    if (length === 0) throw new Error(`Unexpected output at "${rest.slice(0, 20)}" in: ${sql}`);
    rest = rest.slice(length);
  }
  expect(seen.length).toBe(params.length);
  expect([...seen].sort((a, b) => a - b)).toEqual(params.map((_, i) => first + i));
}
