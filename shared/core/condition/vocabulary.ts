/**
 * The closed vocabulary of the condition language: grammar keywords, functions, date parts and
 * CAST/CONVERT target types, plus the T-SQL reserved words that get a dedicated refusal message.
 */
import type { DatePart, PlainFunction, SqlTypeName } from './ast.js';

/** Words the grammar itself uses; never column names when written bare. */
export const GRAMMAR_KEYWORDS: ReadonlySet<string> = new Set([
  'AND',
  'OR',
  'NOT',
  'LIKE',
  'ESCAPE',
  'IN',
  'BETWEEN',
  'IS',
  'NULL',
  'AS',
]);

/** Argument count of each plain function: [min, max]. */
export const FUNCTION_ARITY: Readonly<Record<PlainFunction, readonly [number, number]>> = {
  ISNULL: [2, 2],
  COALESCE: [2, 100],
  UPPER: [1, 1],
  LOWER: [1, 1],
  LTRIM: [1, 1],
  RTRIM: [1, 1],
  TRIM: [1, 1],
  LEN: [1, 1],
  SUBSTRING: [3, 3],
  LEFT: [2, 2],
  RIGHT: [2, 2],
  YEAR: [1, 1],
  MONTH: [1, 1],
  DAY: [1, 1],
  GETDATE: [0, 0],
  ABS: [1, 1],
  ROUND: [2, 2],
};

export function isPlainFunction(word: string): word is PlainFunction {
  return Object.hasOwn(FUNCTION_ARITY, word);
}

/** Functions with a special argument syntax. */
export const SPECIAL_FUNCTIONS: ReadonlySet<string> = new Set(['DATEADD', 'DATEDIFF', 'CAST', 'CONVERT']);

/** Date part spellings accepted by DATEADD / DATEDIFF (T-SQL names and abbreviations). */
export const DATE_PARTS: ReadonlyMap<string, DatePart> = new Map<string, DatePart>([
  ['YEAR', 'year'],
  ['YY', 'year'],
  ['YYYY', 'year'],
  ['QUARTER', 'quarter'],
  ['QQ', 'quarter'],
  ['Q', 'quarter'],
  ['MONTH', 'month'],
  ['MM', 'month'],
  ['M', 'month'],
  ['DAYOFYEAR', 'dayofyear'],
  ['DY', 'dayofyear'],
  ['Y', 'dayofyear'],
  ['DAY', 'day'],
  ['DD', 'day'],
  ['D', 'day'],
  ['WEEK', 'week'],
  ['WK', 'week'],
  ['WW', 'week'],
  ['WEEKDAY', 'weekday'],
  ['DW', 'weekday'],
  ['W', 'weekday'],
  ['HOUR', 'hour'],
  ['HH', 'hour'],
  ['MINUTE', 'minute'],
  ['MI', 'minute'],
  ['N', 'minute'],
  ['SECOND', 'second'],
  ['SS', 'second'],
  ['S', 'second'],
]);

export const TIME_PARTS: ReadonlySet<DatePart> = new Set(['hour', 'minute', 'second']);

/** Argument rules of each CAST/CONVERT target type. */
export interface TypeRule {
  /** Allowed argument count range. */
  readonly args: readonly [number, number];
  /** Range of the first argument. */
  readonly first?: readonly [number, number];
  /** `(MAX)` allowed. */
  readonly max?: boolean;
}

export const TYPE_RULES: Readonly<Record<SqlTypeName, TypeRule>> = {
  INT: { args: [0, 0] },
  BIGINT: { args: [0, 0] },
  SMALLINT: { args: [0, 0] },
  TINYINT: { args: [0, 0] },
  BIT: { args: [0, 0] },
  DECIMAL: { args: [0, 2], first: [1, 38] },
  NUMERIC: { args: [0, 2], first: [1, 38] },
  FLOAT: { args: [0, 1], first: [1, 53] },
  REAL: { args: [0, 0] },
  MONEY: { args: [0, 0] },
  VARCHAR: { args: [0, 1], first: [1, 8000], max: true },
  NVARCHAR: { args: [0, 1], first: [1, 4000], max: true },
  CHAR: { args: [0, 1], first: [1, 8000] },
  NCHAR: { args: [0, 1], first: [1, 4000] },
  DATE: { args: [0, 0] },
  DATETIME: { args: [0, 0] },
  DATETIME2: { args: [0, 1], first: [0, 7] },
  TIME: { args: [0, 1], first: [0, 7] },
  UNIQUEIDENTIFIER: { args: [0, 0] },
};

export function isSqlTypeName(word: string): word is SqlTypeName {
  return Object.hasOwn(TYPE_RULES, word);
}

/** CONVERT styles accepted (each SQL adapter knows how to write each of them in its dialect). */
export const CONVERT_STYLES: ReadonlySet<number> = new Set([
  1, 101, 2, 102, 3, 103, 4, 104, 5, 105, 8, 108, 10, 110, 11, 111, 12, 112, 20, 120, 21, 121, 23, 126,
]);

/** T-SQL reserved words: refused with "Keyword X is not allowed" when written bare. */
export const RESERVED_WORDS: ReadonlySet<string> = new Set(
  `ADD ALL ALTER ANY ASC AUTHORIZATION BACKUP BEGIN BREAK BROWSE BULK BY CASCADE CASE CHECK
  CHECKPOINT CLOSE CLUSTERED COLLATE COLUMN COMMIT COMPUTE CONSTRAINT CONTAINS CONTAINSTABLE
  CONTINUE CREATE CROSS CURRENT CURRENT_DATE CURRENT_TIME CURRENT_TIMESTAMP CURRENT_USER CURSOR
  DATABASE DBCC DEALLOCATE DECLARE DEFAULT DELETE DENY DESC DISK DISTINCT DISTRIBUTED DOUBLE DROP
  DUMP ELSE END ERRLVL EXCEPT EXEC EXECUTE EXISTS EXIT EXTERNAL FETCH FILE FILLFACTOR FOR FOREIGN
  FREETEXT FREETEXTTABLE FROM FULL FUNCTION GOTO GRANT GROUP HAVING HOLDLOCK IDENTITY
  IDENTITY_INSERT IDENTITYCOL IF INDEX INNER INSERT INTERSECT INTO JOIN KEY KILL LINENO LOAD MERGE
  NATIONAL NOCHECK NONCLUSTERED NULLIF OF OFF OFFSETS ON OPEN OPENDATASOURCE OPENQUERY OPENROWSET
  OPENXML OPTION ORDER OUTER OVER PERCENT PIVOT PLAN PRECISION PRIMARY PRINT PROC PROCEDURE PUBLIC
  RAISERROR READ READTEXT RECONFIGURE REFERENCES REPLICATION RESTORE RESTRICT RETURN REVERT REVOKE
  ROLLBACK ROWCOUNT ROWGUIDCOL RULE SAVE SCHEMA SECURITYAUDIT SELECT SEMANTICKEYPHRASETABLE
  SEMANTICSIMILARITYDETAILSTABLE SEMANTICSIMILARITYTABLE SESSION_USER SET SETUSER SHUTDOWN SOME
  STATISTICS SYSTEM_USER TABLE TABLESAMPLE TEXTSIZE THEN TO TOP TRAN TRANSACTION TRIGGER TRUNCATE
  TRY_CONVERT TSEQUAL UNION UNIQUE UNPIVOT UPDATE UPDATETEXT USE USER VALUES VARYING VIEW WAITFOR
  WHEN WHERE WHILE WITH WITHIN WRITETEXT COALESCE CONVERT LEFT RIGHT`
    .split(/\s+/)
    .filter((word) => word !== ''),
);
