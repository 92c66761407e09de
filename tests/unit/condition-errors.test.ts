import { describe, expect, it } from 'vitest';
import { embeddedDialect } from '../../shared/adapters/embedded/dialect.js';
import { mssqlDialect } from '../../shared/adapters/mssql/dialect.js';
import { ConditionError, MAX_LIKE_WILDCARDS } from '../../shared/core/condition/index.js';
import { compileCondition } from '../support/conditions.js';
import { COLUMNS } from './condition-fixture.js';

function refusal(input: string): ConditionError {
  let caught: unknown;
  for (const dialect of [mssqlDialect, embeddedDialect]) {
    try {
      compileCondition(input, COLUMNS, dialect);
    } catch (error) {
      caught = error;
      continue;
    }
    throw new Error(`Accepted for ${dialect.name}: ${input}`);
  }
  expect(caught).toBeInstanceOf(ConditionError);
  return caught as ConditionError;
}

describe('ConditionError', () => {
  it('is an Error with a name, a message and a 1-based position', () => {
    const error = refusal('ID = 1 AND FOO = 2');
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe('ConditionError');
    expect(error.message).toBe('Unknown column "FOO" at position 12');
    expect(error.position).toBe(12);
  });

  it('counts positions in characters, not UTF-16 units', () => {
    const error = refusal("NAZEV = '😀😀' AND FOO = 1");
    expect(error.position).toBe(18);
    expect(error.message).toBe('Unknown column "FOO" at position 18');
  });
});

describe('classic injections are refused with a position', () => {
  const cases: [string, string][] = [
    ['1=1; DROP TABLE x', 'Unexpected ";" at position 4: only one boolean expression is allowed'],
    ["NAZEV = 'a'; DELETE FROM T", 'Unexpected ";" at position 12: only one boolean expression is allowed'],
    ['1=1 --', 'Comments are not allowed (position 5)'],
    ['1=1 -- comment', 'Comments are not allowed (position 5)'],
    ['1=1 /* x */', 'Comments are not allowed (position 5)'],
    ['ID = 1/**/OR 1=1', 'Comments are not allowed (position 7)'],
    ['ID = 1 --\nOR 1=1', 'Comments are not allowed (position 8)'],
    ['1=1 UNION SELECT * FROM WS_APPLICATION', 'Keyword UNION is not allowed at position 5'],
    ['ID IN (SELECT ID FROM X)', 'Subqueries (SELECT) are not allowed at position 8'],
    ['ID = (SELECT MAX(ID) FROM T)', 'Subqueries (SELECT) are not allowed at position 7'],
    ['EXISTS (SELECT 1)', 'Function EXISTS is not allowed at position 1'],
    ["EXEC xp_cmdshell 'dir'", 'Keyword EXEC is not allowed at position 1'],
    ["EXEC('SELECT 1')", 'Function EXEC is not allowed at position 1'],
    ["ID = 1 OR EXECUTE('x') = 1", 'Function EXECUTE is not allowed at position 11'],
    ['@@VERSION = 1', 'System variable "@@VERSION" is not allowed at position 1'],
    ['@x = 1', 'Variable "@x" is not allowed at position 1'],
    ['ID = @p1', 'Variable "@p1" is not allowed at position 6'],
    ['NAZEV = CHAR(39)', 'Function CHAR is not allowed at position 9'],
    ['NAZEV = NCHAR(39)', 'Function NCHAR is not allowed at position 9'],
    ['1=1 OR SLEEP(5)', 'Function SLEEP is not allowed at position 8'],
    ['ID = 1 AND pg_sleep(5) IS NULL', 'Function PG_SLEEP is not allowed at position 12'],
    ["WAITFOR DELAY '0:0:5'", 'Keyword WAITFOR is not allowed at position 1'],
    ["1=1 WAITFOR DELAY '0:0:5'", 'Keyword WAITFOR is not allowed at position 5'],
    ['FOO = 1', 'Unknown column "FOO" at position 1'],
    ['[FOO] = 1', 'Unknown column "FOO" at position 1'],
    ['"ID " = 1', 'Unknown column "ID " at position 1'],
    ['[NAZEV]] = 1', 'Unterminated bracketed identifier starting at position 1'],
    ['"NAZEV = 1', 'Unterminated quoted identifier starting at position 1'],
    ["NAZEV = 'abc", 'Unterminated string literal starting at position 9'],
    ["NAZEV = N'abc''", 'Unterminated string literal starting at position 9'],
    ["NAZEV = 'a' '", 'Unterminated string literal starting at position 13'],
    ['dbo.T.ID = 1', 'Qualified names (schema.table.column) are not allowed: found "." at position 4'],
    ['[dbo].[T] = 1', 'Qualified names (schema.table.column) are not allowed: found "." at position 6'],
    ['ID.5 = 1', 'Unexpected ".5" (expected AND, OR or the end of the condition) at position 3'],
    ['ID . x = 1', 'Qualified names (schema.table.column) are not allowed: found "." at position 4'],
    ['* = 1', '"*" is not allowed here (it is not a column) at position 1'],
    ['COUNT(*) > 0', 'Function COUNT is not allowed at position 1'],
    ['#tmp = 1', 'Unexpected character "#" at position 1'],
    ['`ID` = 1', 'Unexpected character "`" at position 1'],
    ['ID = 1 \\ 2', 'Unexpected character "\\" at position 8'],
    ['ID = $1', 'Unexpected character "$" at position 6'],
    ['ID = {fn NOW()}', 'Unexpected character "{" at position 6'],
    ['ID = 1\u0000', 'Unexpected character U+0000 at position 7'],
    ['ID & 1 = 1', 'Operator "&" is not allowed at position 4'],
    ['ID | 1 = 1', 'Operator "|" is not allowed at position 4'],
    ['~ID = 1', 'Operator "~" is not allowed at position 1'],
    ['ID !< 1', 'Operator "!<" is not allowed at position 4'],
    ['ID = 0x41', 'Binary literals (0x...) are not allowed at position 6'],
    ['ID = 1e3', 'Exponent notation ("1e3") is not allowed at position 6'],
    ['ID = 12abc', 'Invalid number "12abc" at position 6'],
    ['ID = 1.2.3', 'Invalid number "1.2." at position 6'],
    ['ID = 123456789012345678901234567890123456789', 'The number has more than 38 digits at position 6'],
  ];

  it.each(cases)('%s', (input, message) => {
    const error = refusal(input);
    expect(error.message).toBe(message);
    expect(error.message).toContain(`position ${error.position}`);
  });
});

describe('the grammar is strict', () => {
  const cases: [string, string][] = [
    ['', 'The condition is empty at position 1'],
    ['   \n\t ', 'The condition is empty at position 1'],
    ['NAZEV', "Expected a boolean expression (for example NAZEV = 'x') but found a value at position 1"],
    ['1+1', "Expected a boolean expression (for example NAZEV = 'x') but found a value at position 1"],
    [
      "(NAZEV + 'x')",
      "Expected a boolean expression (for example NAZEV = 'x') but found a value at position 2",
    ],
    ['HOTOVO', "Expected a boolean expression (for example NAZEV = 'x') but found a value at position 1"],
    [
      'ID = 1 AND NAZEV',
      "Expected a boolean expression (for example NAZEV = 'x') but found a value at position 12",
    ],
    ['NOT ID', "Expected a boolean expression (for example NAZEV = 'x') but found a value at position 5"],
    ['(ID = 1) = 1', 'Expected a value but found a boolean expression at position 2'],
    ['ID + (ID = 1) = 1', 'Expected a value but found a boolean expression at position 7'],
    ['UPPER(ID = 1) = 1', 'Expected a value but found a boolean expression at position 7'],
    ['ID = 1 = 1', 'Unexpected "=" (expected AND, OR or the end of the condition) at position 8'],
    [
      'ID = 1 UPPER(NAZEV)',
      'Unexpected "UPPER" (expected AND, OR or the end of the condition) at position 8',
    ],
    ['ID = 1 SLEEP(1)', 'Function SLEEP is not allowed at position 8'],
    ['ID = 1 ID = 2', 'Unexpected "ID" (expected AND, OR or the end of the condition) at position 8'],
    ['ID = 1 AND', 'Unexpected end of the condition (expected a value) at position 11'],
    ['ID =', 'Unexpected end of the condition (expected a value) at position 5'],
    ['ID = = 1', 'Unexpected "=" (expected a value) at position 6'],
    ['ID == 1', 'Unexpected "=" (expected a value) at position 5'],
    ['(ID = 1', 'Missing ")" for the "(" opened at position 1'],
    ['ID = 1)', 'Unexpected ")" without a matching "(" at position 7'],
    ['((ID = 1)', 'Missing ")" for the "(" opened at position 1'],
    ['ID IN ()', 'The IN list cannot be empty at position 8'],
    ['ID IN 1, 2', 'Unexpected "1" (expected "(" after IN) at position 7'],
    ['ID IN (1, 2', 'Unexpected end of the condition (expected "," or ")") at position 12'],
    ['ID IN (1 2)', 'Unexpected "2" (expected "," or ")") at position 10'],
    ['ID BETWEEN 1 OR 2', 'Unexpected "OR" (expected AND) at position 14'],
    ['ID IS 1', 'Unexpected "1" (expected NULL or NOT NULL) at position 7'],
    ['ID IS NOT 1', 'Unexpected "1" (expected NULL) at position 11'],
    ['ID NOT = 1', 'Unexpected "NOT" (expected AND, OR or the end of the condition) at position 4'],
    ['ID = NOT 1', 'Unexpected "NOT" (expected a value) at position 6'],
    ['ID = AND', 'Unexpected "AND" (expected a value) at position 6'],
    ["NAZEV LIKE 'a' ESCAPE 'ab'", 'ESCAPE needs a string literal of exactly one character at position 23'],
    ["NAZEV LIKE 'a' ESCAPE NAZEV", 'ESCAPE needs a string literal of exactly one character at position 23'],
    ["NAZEV LIKE '[abc'", 'The LIKE pattern has a "[" without a closing "]" at position 12'],
    ["NAZEV LIKE '[]'", 'The LIKE pattern has an empty character class "[]" at position 12'],
    ["NAZEV LIKE '[z-a]'", 'The LIKE pattern has an invalid range "z-a" at position 12'],
    ["NAZEV LIKE 'ab!' ESCAPE '!'", 'The LIKE pattern ends with its ESCAPE character at position 12'],
    ['ID = CURRENT_TIMESTAMP', 'Keyword CURRENT_TIMESTAMP is not allowed at position 6'],
    ['ID = USER', 'Keyword USER is not allowed at position 6'],
    ['SELECT = 1', 'Subqueries (SELECT) are not allowed at position 1'],
    ['ID = 1 ORDER BY ID', 'Keyword ORDER is not allowed at position 8'],
    ['LEFT = 1', 'Keyword LEFT is not allowed at position 1'],
    ['ID = 1 COLLATE Latin1_General_BIN', 'Keyword COLLATE is not allowed at position 8'],
    ['CASE WHEN ID = 1 THEN 1 END = 1', 'Keyword CASE is not allowed at position 1'],
    ['IIF(ID = 1, 1, 0) = 1', 'Function IIF is not allowed at position 1'],
    ['TRY_CONVERT(INT, NAZEV) = 1', 'Function TRY_CONVERT is not allowed at position 1'],
    ["OPENROWSET('x') = 1", 'Function OPENROWSET is not allowed at position 1'],
    ['dbo.fn(1) = 1', 'Qualified names (schema.table.column) are not allowed: found "." at position 4'],
    // functions: argument counts and argument kinds
    ['UPPER(NAZEV, 1) = 1', 'Function UPPER expects 1 argument, got 2 at position 1'],
    ['ISNULL(NAZEV) = 1', 'Function ISNULL expects 2 arguments, got 1 at position 1'],
    ['COALESCE(NAZEV) = 1', 'Function COALESCE expects at least 2 arguments, got 1 at position 1'],
    ['SUBSTRING(NAZEV, 1) = 1', 'Function SUBSTRING expects 3 arguments, got 2 at position 1'],
    ['GETDATE(1) = 1', 'Function GETDATE expects 0 arguments, got 1 at position 1'],
    ['GETDATE = 1', 'Unknown column "GETDATE" at position 1'],
    ['ROUND(CENA) = 1', 'Function ROUND expects 2 arguments, got 1 at position 1'],
    ['YEAR(ID) = 1', 'The argument of YEAR cannot be number at position 6'],
    ['LEFT(NAZEV, DATUM) = 1', 'The length of LEFT cannot be datetime at position 13'],
    [
      'DATEADD(days, 1, DATUM) > DATUM',
      'DATEADD expects a date part (year, quarter, month, dayofyear, day, week, weekday, hour, minute, second) as its first argument at position 9',
    ],
    [
      "DATEADD('day', 1, DATUM) > DATUM",
      'DATEADD expects a date part (year, quarter, month, dayofyear, day, week, weekday, hour, minute, second) as its first argument at position 9',
    ],
    [
      'DATEADD([day], 1, DATUM) > DATUM',
      'DATEADD expects a date part (year, quarter, month, dayofyear, day, week, weekday, hour, minute, second) as its first argument at position 9',
    ],
    ['DATEADD(day, DATUM, DATUM) > DATUM', 'The number of DATEADD cannot be datetime at position 14'],
    ['DATEADD(day, 1, ID) > 1', 'The date of DATEADD cannot be number at position 17'],
    ['DATEADD(hour, 1, DEN) > DEN', 'DATEADD(hour, ...) cannot be used on a date value at position 1'],
    ['DATEADD(day, 1, CAS) > CAS', 'DATEADD(day, ...) cannot be used on a time value at position 1'],
    ['DATEDIFF(day, CAS, CAS) > 1', 'A date of DATEDIFF cannot be time at position 15'],
    ['DATEDIFF(day, DATUM) > 1', 'Unexpected ")" (expected ",") at position 20'],
    // types of CAST / CONVERT
    [
      'CAST(ID AS TEXT) = 1',
      'Unsupported type "TEXT" (allowed: INT, BIGINT, SMALLINT, TINYINT, BIT, DECIMAL, NUMERIC, FLOAT, REAL, MONEY, VARCHAR, NVARCHAR, CHAR, NCHAR, DATE, DATETIME, DATETIME2, TIME, UNIQUEIDENTIFIER) at position 12',
    ],
    [
      'CAST(ID AS [INT]) = 1',
      'Unsupported type "[INT]" (allowed: INT, BIGINT, SMALLINT, TINYINT, BIT, DECIMAL, NUMERIC, FLOAT, REAL, MONEY, VARCHAR, NVARCHAR, CHAR, NCHAR, DATE, DATETIME, DATETIME2, TIME, UNIQUEIDENTIFIER) at position 12',
    ],
    ['CAST(ID AS INT(4)) = 1', 'Type INT takes at most 0 argument(s) at position 15'],
    [
      'CAST(ID AS DECIMAL(39,2)) = 1',
      'The length or precision of DECIMAL must be from 1 to 38 at position 19',
    ],
    ['CAST(ID AS DECIMAL(5,6)) = 1', 'The scale of DECIMAL must be from 0 to 5 at position 19'],
    ['CAST(ID AS DECIMAL(5,2,1)) = 1', 'Type DECIMAL takes at most 2 argument(s) at position 19'],
    [
      'CAST(ID AS VARCHAR(0)) = 1',
      'The length or precision of VARCHAR must be from 1 to 8000 at position 19',
    ],
    ['CAST(ID AS CHAR(MAX)) = 1', 'Invalid length or precision for type CHAR at position 17'],
    ['CAST(ID AS VARCHAR(1.5)) = 1', 'Invalid length or precision for type VARCHAR at position 20'],
    ['CAST(ID AS VARCHAR(ID)) = 1', 'Invalid length or precision for type VARCHAR at position 20'],
    ['CAST(ID, INT) = 1', 'Unexpected "," (expected AS) at position 8'],
    ['CAST(ID AS DATE) = 1', 'Cannot convert number to DATE at position 1'],
    ['CONVERT(UNIQUEIDENTIFIER, ID) IS NULL', 'Cannot convert number to UNIQUEIDENTIFIER at position 1'],
    ['CONVERT(INT, DATUM) = 1', 'Cannot convert datetime to INT at position 1'],
    [
      'CONVERT(VARCHAR(10), DATUM, 999) = 1',
      'CONVERT style 999 is not supported (allowed: 1, 101, 2, 102, 3, 103, 4, 104, 5, 105, 8, 108, 10, 110, 11, 111, 12, 112, 20, 120, 21, 121, 23, 126) at position 29',
    ],
    ['CONVERT(VARCHAR(10), DATUM, ID) = 1', 'The style of CONVERT must be an integer literal at position 29'],
    [
      'CONVERT(VARCHAR(10), DATUM, 10.5) = 1',
      'The style of CONVERT must be an integer literal at position 29',
    ],
    // Fractions of a second in SQL Server's text follow the value's type (docs/api.md, condition language).
    [
      "CONVERT(VARCHAR(30), DATUM, 121) = 'x'",
      "CONVERT style 121 of a date/time value is not supported (its fraction digits depend on the value's type); use style 120 or 23 at position 1",
    ],
    [
      "CONVERT(VARCHAR(30), DEN, 126) = 'x'",
      "CONVERT style 126 of a date/time value is not supported (its fraction digits depend on the value's type); use style 120 or 23 at position 1",
    ],
    [
      "CONVERT(VARCHAR(30), CAS, 21) = 'x'",
      "CONVERT style 21 of a date/time value is not supported (its fraction digits depend on the value's type); use style 120 or 23 at position 1",
    ],
    [
      'CONVERT(VARCHAR(10), ID, 104) = 1',
      'A CONVERT style is only supported between date/time values and text at position 1',
    ],
    // kinds of operands
    ['ID = DATUM', 'Cannot compare number with datetime at position 4'],
    ['DATUM IN (1, 2)', 'Cannot compare number with datetime at position 7'],
    ['ID BETWEEN 1 AND DATUM', 'Cannot compare number with datetime at position 4'],
    ['GUID = 1', 'Cannot compare uniqueidentifier with number at position 6'],
    ['CAS = DEN', 'Cannot compare time with date at position 5'],
    [
      'DATUM + 1 > DATUM',
      'Operator + cannot be used with datetime values (use DATEADD or DATEDIFF) at position 7',
    ],
    [
      'DATUM - DATUM > 1',
      'Operator - cannot be used with datetime values (use DATEADD or DATEDIFF) at position 7',
    ],
    ["GUID + 'x' = 'x'", 'Operator + cannot be used with uniqueidentifier values at position 6'],
    ["NAZEV * 'x' = 1", 'Operator * cannot be used with two text values at position 7'],
    ['-NAZEV = 1', 'The operand of unary - cannot be text at position 1'],
    ['-DATUM = 1', 'The operand of unary - cannot be datetime at position 1'],
    // columns of unsupported types (binary, other) only meet NULL, each other and text
    ['DATA + 1 = 1', 'Operator + cannot be used with a value of unsupported type at position 6'],
    ['DATA = 1', 'Cannot compare a value of unsupported type with number at position 6'],
    ["ISNULL(DATA, 'x') = 'x'", 'Cannot combine a value of unsupported type with other values at position 1'],
    ['YEAR(DATA) = 1', 'The argument of YEAR cannot be a value of unsupported type at position 6'],
    ['CAST(DATA AS INT) = 1', 'Cannot convert a value of unsupported type to INT at position 1'],
    ['-DATA = 1', 'The operand of unary - cannot be a value of unsupported type at position 1'],
  ];

  it.each(cases)('%s', (input, message) => {
    const error = refusal(input);
    expect(error.message).toBe(message);
  });
});

describe('limits', () => {
  // The same parse on both dialects: compiled for one is enough to see a refusal.
  const compile = (input: string) => compileCondition(input, COLUMNS, mssqlDialect);

  it('refuses what SQL Server refuses of texts read as datetime (issue 19)', () => {
    for (const [condition, message] of [
      ["CAST('2024-01-15 12:00:00.1234' AS DATETIME) = DATUM", 'DATETIME takes at most 3'],
      ["DATEADD(day, 1, '2024-01-15 12:00:00.12345') = DATUM", 'DATETIME takes at most 3'],
      ["DATEADD(year, 1, '1700-06-15') = DATUM", 'out of the range of DATETIME (years 1753 to 9999)'],
      ["DATEADD(day, 1, '9999-12-31') = DATUM", 'out of the range of DATETIME (years 1753 to 9999)'],
      ["DATEADD(day, -1, '1753-01-01') = DATUM", 'out of the range of DATETIME (years 1753 to 9999)'],
    ] as const) {
      expect(() => compile(condition), condition).toThrow(message);
    }
    expect(() => compile("CAST('2024-01-15 12:00:00.1234567' AS DATETIME2) = DATUM")).not.toThrow();
    expect(() => compile("DATEADD(day, 1, '2024-01-15 12:00:00.123') = DATUM")).not.toThrow();
  });

  it(`refuses more than ${MAX_LIKE_WILDCARDS} LIKE wildcards in one condition`, () => {
    expect(() => compile(`NAZEV LIKE '${'%a'.repeat(MAX_LIKE_WILDCARDS)}'`)).not.toThrow();
    expect(() => compile(`NAZEV LIKE '${'%a'.repeat(MAX_LIKE_WILDCARDS + 1)}'`)).toThrow(
      `more than ${MAX_LIKE_WILDCARDS} of %, _ and [...] in one condition`,
    );
    expect(() => compile(`NAZEV LIKE '%a%' AND NAZEV LIKE '${'_'.repeat(MAX_LIKE_WILDCARDS - 1)}'`)).toThrow(
      'too many wildcards',
    );
    expect(() => compile(`NAZEV LIKE '${'%_'.repeat(3)}' + '${'%_'.repeat(3)}'`)).toThrow(
      'too many wildcards',
    );
  });

  it('refuses conditions longer than 4000 characters', () => {
    const input = `NAZEV = '${'x'.repeat(4000)}'`;
    const error = refusal(input);
    expect(error.message).toBe(
      'The condition is too long (more than 4000 characters): it exceeds the limit at position 4001',
    );
  });

  it('accepts 4000 characters', () => {
    const input = `NAZEV = '${'x'.repeat(3990)}'`;
    expect(input).toHaveLength(4000);
    expect(compileCondition(input, COLUMNS, mssqlDialect).params).toEqual(['x'.repeat(3990)]);
  });

  it('accepts 50 levels of parentheses and refuses 51', () => {
    expect(() =>
      compileCondition(`${'('.repeat(50)}ID = 1${')'.repeat(50)}`, COLUMNS, mssqlDialect),
    ).not.toThrow();
    const error = refusal(`${'('.repeat(51)}ID = 1${')'.repeat(51)}`);
    expect(error.message).toBe('The condition is nested too deeply (more than 50 levels) at position 51');
  });

  it('refuses deep nesting of functions, NOT and unary minus', () => {
    expect(refusal(`${'UPPER('.repeat(60)}NAZEV${')'.repeat(60)} = 'x'`).message).toMatch(
      /nested too deeply/,
    );
    expect(refusal(`${'NOT '.repeat(60)}ID = 1`).message).toMatch(/nested too deeply/);
    expect(refusal(`${'-'.repeat(60)}ID = 1`).message).toMatch(/Comments are not allowed|nested too deeply/);
    expect(refusal(`${'- '.repeat(60)}ID = 1`).message).toMatch(/nested too deeply/);
    expect(refusal(`ID IN ${'('.repeat(60)}1${')'.repeat(60)}`).message).toMatch(/nested too deeply/);
  });

  it('refuses very long operator chains as too complex, without overflowing the stack', () => {
    expect(refusal(`${'1+'.repeat(1990)}1 = 1`).message).toMatch(/too complex/);
    expect(refusal(`ID = ${'1*'.repeat(1990)}1`).message).toMatch(/too complex/);
  });

  it('accepts long AND / OR chains (they are flattened)', () => {
    const input = Array.from({ length: 300 }, (_, i) => `ID = ${i}`).join(' OR ');
    const { params } = compileCondition(input, COLUMNS, embeddedDialect);
    expect(params).toHaveLength(300);
  });

  it('refuses a translation that would need too many parameters', () => {
    const input = `ID IN (${Array.from({ length: 1995 }, () => '1').join(',')})`;
    expect(input.length).toBeLessThanOrEqual(4000);
    expect(compileCondition(input, COLUMNS, mssqlDialect).params).toHaveLength(1995);
    // DATEDIFF(second, ...) repeats its operands in PostgreSQL, each time with fresh parameters.
    let date = "'2024-01-01'";
    for (let i = 0; i < 6; i++) date = `DATEADD(day, DATEDIFF(second, ${date}, DATUM), DATUM)`;
    expect(compileCondition(`${date} > DATUM`, COLUMNS, mssqlDialect).params).toHaveLength(1);
    expect(() => compileCondition(`${date} > DATUM`, COLUMNS, embeddedDialect)).toThrow(
      new ConditionError('The condition is too complex: it needs more than 2000 parameters (position 1)', 1),
    );
  });

  it('refuses translations that would grow exponentially', () => {
    let small = 'DATUM';
    for (let i = 0; i < 12; i++) small = `DATEADD(day, DATEDIFF(second, ${small}, DATUM), DATUM)`;
    const input = `${small} > DATUM`;
    expect(input.length).toBeLessThan(4000);
    expect(compileCondition(input, COLUMNS, mssqlDialect).sql.length).toBeLessThan(2000);
    expect(() => compileCondition(input, COLUMNS, embeddedDialect)).toThrow(
      'The condition is too complex: its translation is too long (position 1)',
    );
  });

  it('refuses non-string input with a ConditionError', () => {
    expect(() => compileCondition(undefined as unknown as string, COLUMNS, mssqlDialect)).toThrow(
      ConditionError,
    );
  });

  it('refuses a bad firstParamIndex as a programming error', () => {
    expect(() => compileCondition('ID = 1', COLUMNS, mssqlDialect, 0)).toThrow(RangeError);
  });
});

describe('columns', () => {
  it('are matched case-insensitively and written with their catalogue name', () => {
    expect(compileCondition('nazev = 1', COLUMNS, mssqlDialect).sql).toBe('([NAZEV] = @p1)');
    expect(compileCondition('[mixed case] = 1', COLUMNS, mssqlDialect).sql).toBe('([Mixed Case] = @p1)');
    expect(compileCondition('"MIXED CASE" = 1', COLUMNS, embeddedDialect).sql).toBe(
      '(CAST("Mixed Case" AS numeric) = CAST($1 AS integer))',
    );
  });

  it('need brackets when they are reserved words, and then never count as keywords', () => {
    const columns = [
      { name: 'SELECT', kind: 'int', dataType: 'int', ordinal: 1 },
      { name: 'date', kind: 'date', dataType: 'date', ordinal: 2 },
      { name: 'Název', kind: 'string', dataType: 'nvarchar', ordinal: 3 },
    ] as const;
    expect(compileCondition('[SELECT] = 1', columns, mssqlDialect).sql).toBe('([SELECT] = @p1)');
    expect(compileCondition('"select" = 1', columns, mssqlDialect).sql).toBe('([SELECT] = @p1)');
    expect(() => compileCondition('SELECT = 1', columns, mssqlDialect)).toThrow(
      'Subqueries (SELECT) are not allowed',
    );
    expect(compileCondition("date = '2024-01-01'", columns, mssqlDialect).sql).toBe('([date] = @p1)');
    expect(compileCondition("CONVERT(date, date) = '2024-01-01'", columns, mssqlDialect).sql).toBe(
      '(CONVERT(DATE, [date]) = @p1)',
    );
    expect(compileCondition("NÁZEV = 'x'", columns, mssqlDialect).sql).toBe('([Název] = @p1)');
  });

  it('are ambiguous only when the catalogue has names differing in case', () => {
    const columns = [
      { name: 'a', kind: 'int', dataType: 'integer', ordinal: 1 },
      { name: 'A', kind: 'int', dataType: 'integer', ordinal: 2 },
    ] as const;
    expect(compileCondition('"a" = 1', columns, embeddedDialect).sql).toBe('("a" = CAST($1 AS integer))');
    expect(compileCondition('A = 1', columns, embeddedDialect).sql).toBe('("A" = CAST($1 AS integer))');
    expect(() => compileCondition('[a ] = 1', columns, mssqlDialect)).toThrow('Unknown column "a "');
  });

  it('escape quote characters of catalogue names', () => {
    const columns = [{ name: 'we]ird"name', kind: 'string', dataType: 'nvarchar', ordinal: 1 }] as const;
    expect(compileCondition("[we]]ird\"name] = 'x'", columns, mssqlDialect).sql).toBe(
      '([we]]ird"name] = @p1)',
    );
    expect(compileCondition('"we]ird""name" = \'x\'', columns, embeddedDialect).sql).toBe(
      '(rtrim(lower(("we]ird""name") COLLATE "und-x-icu")) = rtrim(lower((CAST($1 AS text)) COLLATE "und-x-icu")))',
    );
  });
});

describe('values SQL Server refuses are refused on every database (PostgreSQL would take them)', () => {
  const cases: [string, RegExp][] = [
    ['LEFT(NAZEV, -1) = 1', /negative length \(-1\) was given to LEFT/],
    ["RIGHT(NAZEV, -2) = 'a'", /negative length \(-2\) was given to RIGHT/],
    ["SUBSTRING(NAZEV, 1, -1) = 'a'", /negative length \(-1\) was given to SUBSTRING/],
    ["LEFT(NAZEV, '-1') = 'a'", /negative length/],
    ['CAST(300 AS TINYINT) = 1', /300 is out of the range of TINYINT \(0 to 255\)/],
    ['CAST(-1 AS TINYINT) = 1', /out of the range of TINYINT/],
    ["CAST('256' AS TINYINT) = 1", /out of the range of TINYINT/],
    ['CAST(32768 AS SMALLINT) = 1', /out of the range of SMALLINT/],
    ['CAST(2147483648 AS INT) = 1', /out of the range of INT/],
    ['CAST(-9223372036854775809 AS BIGINT) = 1', /out of the range of BIGINT/],
    ['CAST(123.4 AS DECIMAL(3,1)) = 1', /does not fit DECIMAL\(3,1\)/],
    ['CAST(9.96 AS NUMERIC(2,1)) = 1', /does not fit NUMERIC\(2,1\)/],
    ['CAST(1000000000000000 AS MONEY) = 1', /out of the range of MONEY/],
    ["CAST('0x1F' AS INT) = 1", /cannot convert the text '0x1F' to INT/],
    ["CAST('1_000' AS INT) = 1", /cannot convert the text '1_000' to INT/],
    ["CAST('1.5' AS INT) = 1", /cannot convert the text '1.5' to INT/],
    ["CAST('NaN' AS DECIMAL(10,2)) = 1", /cannot convert the text 'NaN'/],
    ["CAST('Infinity' AS FLOAT) = 1", /cannot convert the text 'Infinity'/],
    ["ID = '1e3x'", /cannot convert the text '1e3x' to a number/],
    ["HOTOVO = 'yes'", /cannot convert the text 'yes' to BIT/],
    ["HOTOVO = 'on'", /to BIT/],
    ["HOTOVO = 't'", /to BIT/],
    ["CAST('y' AS BIT) = 1", /to BIT/],
    ["DATUM = 'infinity'", /cannot convert the text 'infinity' to datetime/],
    ["DATUM > '-infinity'", /'-infinity'/],
    ["DATUM = 'epoch'", /'epoch'/],
    ["DATUM < 'now'", /'now'/],
    ["DEN = 'today'", /'today' to date/],
    ["DEN = 'tomorrow'", /'tomorrow'/],
    ["CAS = 'allballs'", /'allballs' to time/],
    ["DEN = 'J2451187'", /'J2451187'/],
    ["DEN = '2000-01-01 BC'", /'2000-01-01 BC'/],
    ["DEN = '2024-W01-1'", /'2024-W01-1'/],
    ["DATUM = '2024-01-01 10:00:00+02'", /cannot convert/],
    ["DATUM = '2024-01-01 10:00 PST'", /cannot convert/],
    ["DEN = '20000-01-01'", /cannot convert/],
    ["DEN = '2024-02-30'", /cannot convert/],
    ["DATUM = '2024-01-01 24:00'", /cannot convert/],
    ["CAST('1752-12-31' AS DATETIME) = DATUM", /out of the range of DATETIME \(years 1753 to 9999\)/],
    ["CAST('0000-01-01' AS DATE) = DEN", /out of the range of DATE/],
    ["YEAR('epoch') = 1970", /'epoch'/],
    ["DATEADD(day, 1, 'today') = DATUM", /'today'/],
    ["DATEDIFF(day, 'yesterday', DATUM) = 1", /'yesterday'/],
    ["GUID = '6F9619FF8B86D011B42D00C04FC964FF'", /to uniqueidentifier/],
    ["ISNULL(DEN, 'epoch') = DEN", /'epoch'/],
    ["DEN IN ('2024-01-01', 'today')", /'today'/],
    ["DEN BETWEEN 'epoch' AND '2024-01-01'", /'epoch'/],
    // SQL Server error 402: no modulo of FLOAT / REAL, whatever the other operand.
    ['MNOZSTVI % 2 = 1', /Operator % cannot be used with FLOAT or REAL values/],
    ['ID % MNOZSTVI = 1', /Operator % cannot be used with FLOAT/],
    ['CAST(ID AS FLOAT) % 2 = 1', /Operator % cannot be used with FLOAT/],
    ['CAST(ID AS REAL) % 2 = 1', /Operator % cannot be used with FLOAT/],
    ['(ID + MNOZSTVI) % 3 = 1', /Operator % cannot be used with FLOAT/],
    ['ABS(-MNOZSTVI) % 3 = 1', /Operator % cannot be used with FLOAT/],
    ['ROUND(ISNULL(MNOZSTVI, 1), 0) % 3 = 1', /Operator % cannot be used with FLOAT/],
    ['COALESCE(ID, MNOZSTVI) % 3 = 1', /Operator % cannot be used with FLOAT/],
    // ISNULL converts the replacement to the first argument's type (SQL Server error 220).
    ['ISNULL(AKTIVNI, 100000) = 1', /100000 is out of the range of SMALLINT \(-32768 to 32767\)/],
    ['ISNULL(-AKTIVNI, -32769) = 1', /out of the range of SMALLINT/],
    ["ISNULL(AKTIVNI, '40000') = 1", /out of the range of SMALLINT/],
    ['ISNULL(CAST(ID AS TINYINT), 256) = 1', /256 is out of the range of TINYINT/],
    ['ISNULL(ABS(AKTIVNI), 32768) = 1', /out of the range of SMALLINT/],
    ['ISNULL(ID, 2147483648) = 1', /out of the range of INT/],
    ['ISNULL(LEN(NAZEV), 3000000000) = 1', /out of the range of INT/],
  ];
  it.each(cases)('%s', (input, message) => {
    expect(refusal(input).message).toMatch(message);
  });

  it.each([
    "DATUM >= '2024-01-02'",
    "DATUM >= '20240102'",
    "DATUM >= '2024-01-02T10:11:12'",
    "DATUM >= '2024-01-02T10:11:12.123Z'",
    "DATUM >= '2024-01-02 10:11'",
    "DATUM >= '01/02/2024'",
    "DATUM >= '1/2/24 10:11:12 PM'",
    "DATUM >= 'Jan 2 2024'",
    "DATUM >= 'January 2, 2024 10:00AM'",
    "DATUM >= '2 January 2024'",
    "CAS > '10:11:12.1234567'",
    "CAST('1753-01-01' AS DATETIME) = DATUM",
    "CAST('0001-01-01' AS DATE) = DEN",
    "HOTOVO = 'TRUE'",
    "HOTOVO = 'false'",
    "HOTOVO = '1'",
    'CAST(255 AS TINYINT) = 1',
    "CAST(' 12 ' AS INT) = 12",
    "CAST('-5' AS SMALLINT) = ID",
    'CAST(255.9 AS TINYINT) = 255',
    "CAST('1e3' AS FLOAT) = 1000",
    'CAST(99.94 AS DECIMAL(3,1)) = 1',
    "ID = ' 1.5 '",
    "LEFT(NAZEV, 0) = ''",
    "GUID = '{6F9619FF-8B86-D011-B42D-00C04FC964FF}'",
    'ID % 3.5 = 1',
    'CAST(MNOZSTVI AS DECIMAL(10,2)) % 2 = 1',
    'ISNULL(AKTIVNI, 32767) = 1',
    'ISNULL(AKTIVNI, 2.5) = 1',
    'ISNULL(AKTIVNI + 100000, 100000) = 1',
    'ISNULL(CAST(ID AS BIGINT), 3000000000) = 1',
    'ISNULL(MNOZSTVI, 100000000000) = 1',
  ])('accepts %s, as SQL Server does', (input) => {
    expect(() => compileCondition(input, COLUMNS, embeddedDialect)).not.toThrow();
    expect(() => compileCondition(input, COLUMNS, mssqlDialect)).not.toThrow();
  });
});

describe('ROUND with a negative length', () => {
  it('is refused at parse time, naming the length and a way around', () => {
    const error = refusal('ROUND(ID, -1) = 10');
    expect(error.message).toMatch(/negative length of ROUND is not supported.*at position 11/);
    expect(() => compileCondition('ROUND(ID, 0) = 10', COLUMNS, mssqlDialect)).not.toThrow();
  });
});
