import { describe, expect, it } from 'vitest';
import { translateMssqlCondition } from '../../shared/adapters/mssql/condition.js';
import { mssqlDialect } from '../../shared/adapters/mssql/dialect.js';
import { compileConditionWith } from '../../shared/core/condition/index.js';
import { COLUMNS, checkCompiled } from './condition-fixture.js';

function compile(condition: string, first = 1) {
  const result = compileConditionWith(translateMssqlCondition, condition, COLUMNS, first);
  checkCompiled(result.sql, result.params, mssqlDialect, COLUMNS, first);
  return result;
}

describe('SQL Server output', () => {
  const cases: [string, string, unknown[]][] = [
    // columns and literals
    ["NAZEV = 'alfa'", '([NAZEV] = @p1)', ['alfa']],
    ["[NAZEV] = N'Žluťoučký'", '([NAZEV] = @p1)', ['Žluťoučký']],
    ["\"nazev\" <> 'it''s'", '([NAZEV] <> @p1)', ["it's"]],
    ["NAZEV != ''", '([NAZEV] <> @p1)', ['']],
    ['[Mixed Case] >= 5', '([Mixed Case] >= @p1)', [5]],
    [
      'ID < 10 AND ID <= 11 AND ID > 0 AND ID >= 1',
      '(([ID] < @p1) AND ([ID] <= @p2) AND ([ID] > @p3) AND ([ID] >= @p4))',
      [10, 11, 0, 1],
    ],
    ['CENA = 1234.50', '([CENA] = CAST(@p1 AS DECIMAL(6,2)))', ['1234.50']],
    ['CENA = .5', '([CENA] = CAST(@p1 AS DECIMAL(1,1)))', ['0.5']],
    ['CENA = 007.10', '([CENA] = CAST(@p1 AS DECIMAL(3,2)))', ['7.10']],
    ['ID = 1 AND .5 < CENA', '(([ID] = @p1) AND (CAST(@p2 AS DECIMAL(1,1)) < [CENA]))', [1, '0.5']],
    ['CENA = 12.', '([CENA] = CAST(@p1 AS DECIMAL(2,0)))', ['12']],
    ['ID = 007', '([ID] = @p1)', [7]],
    ['ID = 2147483647', '([ID] = @p1)', [2147483647]],
    ['ID = 2147483648', '([ID] = CAST(@p1 AS DECIMAL(10,0)))', ['2147483648']],
    [
      'CENA = 12345678901234567890.123456789012345678',
      '([CENA] = CAST(@p1 AS DECIMAL(38,18)))',
      ['12345678901234567890.123456789012345678'],
    ],
    ['CENA IS NULL', '([CENA] IS NULL)', []],
    ['CENA IS NOT NULL', '([CENA] IS NOT NULL)', []],
    ['CENA = NULL', '([CENA] = NULL)', []],
    // the quote game
    ["'a' = 'a''; DROP TABLE x; --'", '(@p1 = @p2)', ['a', "a'; DROP TABLE x; --"]],
    ['NAZEV = \'/* x */ -- ; [y] "z" @v\'', '([NAZEV] = @p1)', ['/* x */ -- ; [y] "z" @v']],
    // arithmetic
    ['-CENA > 1', '((-[CENA]) > @p1)', [1]],
    ['- -ID = 1', '((-(-[ID])) = @p1)', [1]],
    ['+ID = 1', '([ID] = @p1)', [1]],
    ['ID - -1 = 2', '(([ID] - (-@p1)) = @p2)', [1, 2]],
    [
      'ID + 1 * 2 - 3 / 4 % 5 = 0',
      '((([ID] + (@p1 * @p2)) - ((@p3 / @p4) % @p5)) = @p6)',
      [1, 2, 3, 4, 5, 0],
    ],
    ['(ID + 1) * 2 = 8', '((([ID] + @p1) * @p2) = @p3)', [1, 2, 8]],
    ["NAZEV + 'x' = 'ax'", '(([NAZEV] + @p1) = @p2)', ['x', 'ax']],
    // boolean logic
    ['ID = 1 OR ID = 2 AND NOT ID = 3', '(([ID] = @p1) OR (([ID] = @p2) AND (NOT ([ID] = @p3))))', [1, 2, 3]],
    ['(ID = 1 OR ID = 2) AND ID = 3', '((([ID] = @p1) OR ([ID] = @p2)) AND ([ID] = @p3))', [1, 2, 3]],
    ['NOT (ID = 1)', '(NOT ([ID] = @p1))', [1]],
    ['NOT NOT ID = 1', '(NOT (NOT ([ID] = @p1)))', [1]],
    // predicates
    ["NAZEV LIKE 'a%'", '([NAZEV] LIKE @p1)', ['a%']],
    ["NAZEV NOT LIKE '[a-c]_%'", '([NAZEV] NOT LIKE @p1)', ['[a-c]_%']],
    ["NAZEV LIKE 'a!%' ESCAPE '!'", '([NAZEV] LIKE @p1 ESCAPE @p2)', ['a!%', '!']],
    ['NAZEV LIKE POZN', '([NAZEV] LIKE [POZN])', []],
    ['ID IN (1, 2, 3)', '([ID] IN (@p1, @p2, @p3))', [1, 2, 3]],
    ['ID NOT IN (1, ID + 1)', '([ID] NOT IN (@p1, ([ID] + @p2)))', [1, 1]],
    ['ID BETWEEN 1 AND 2 AND ID = 3', '(([ID] BETWEEN @p1 AND @p2) AND ([ID] = @p3))', [1, 2, 3]],
    ['ID NOT BETWEEN 1 AND 2', '([ID] NOT BETWEEN @p1 AND @p2)', [1, 2]],
    ["DATUM >= '2024-01-01'", '([DATUM] >= @p1)', ['2024-01-01']],
    // functions
    ["isnull(POZN, 'x') = 'x'", '(ISNULL([POZN], @p1) = @p2)', ['x', 'x']],
    ['COALESCE(CENA, MNOZSTVI, 0) = 0', '(CAST(COALESCE([CENA], [MNOZSTVI], @p1) AS FLOAT) = @p2)', [0, 0]],
    // Without a FLOAT among them: as written.
    ['COALESCE(ID, 0) = 0', '(COALESCE([ID], @p1) = @p2)', [0, 0]],
    [
      "UPPER(NAZEV) = LOWER(POZN) AND LTRIM(NAZEV) = RTRIM(NAZEV) AND TRIM(NAZEV) = 'x'",
      '((CAST(UPPER([NAZEV]) AS NVARCHAR(MAX)) = CAST(LOWER([POZN]) AS NVARCHAR(MAX))) AND (CAST(LTRIM([NAZEV]) AS NVARCHAR(MAX)) = CAST(RTRIM([NAZEV]) AS NVARCHAR(MAX))) AND (CAST(TRIM([NAZEV]) AS NVARCHAR(MAX)) = @p1))',
      ['x'],
    ],
    ['LEN(NAZEV) > 3', '(LEN([NAZEV]) > @p1)', [3]],
    ["SUBSTRING(NAZEV, 2, 3) = 'lfa'", '(SUBSTRING([NAZEV], @p1, @p2) = @p3)', [2, 3, 'lfa']],
    // Babelfish's LEFT/RIGHT/UPPER/LOWER give text that compares trailing blanks; as NVARCHAR it does not.
    [
      'LEFT(NAZEV, 2) = RIGHT(NAZEV, 2)',
      '(CAST(LEFT([NAZEV], @p1) AS NVARCHAR(MAX)) = CAST(RIGHT([NAZEV], @p2) AS NVARCHAR(MAX)))',
      [2, 2],
    ],
    // A computed length fails when negative on Babelfish too (through SUBSTRING), as on SQL Server.
    [
      "LEFT(NAZEV, ID - 3) = 'a'",
      '(CAST(LEFT([NAZEV], (([ID] - @p1) + 0 * LEN(SUBSTRING(@p2, 1, ([ID] - @p3))))) AS NVARCHAR(MAX)) = @p4)',
      [3, '', 3, 'a'],
    ],
    [
      'YEAR(DATUM) = 2024 AND MONTH(DEN) = 1 AND DAY(DATUM) = 15',
      '((YEAR([DATUM]) = @p1) AND (MONTH([DEN]) = @p2) AND (DAY([DATUM]) = @p3))',
      [2024, 1, 15],
    ],
    ['DATUM < getdate()', '([DATUM] < GETDATE())', []],
    ['DATEADD(dd, -1, DATUM) < GETDATE()', '(DATEADD(day, (-@p1), [DATUM]) < GETDATE())', [1]],
    ['DATEADD(YYYY, 1, DEN) > DEN', '(DATEADD(year, @p1, [DEN]) > [DEN])', [1]],
    ['DATEADD(q, 1, DEN) > DEN', '(DATEADD(quarter, @p1, [DEN]) > [DEN])', [1]],
    ['DATEADD(mi, 1, CAS) > CAS', '(DATEADD(minute, @p1, [CAS]) > [CAS])', [1]],
    ['DATEDIFF(m, DATUM, GETDATE()) > 1', '(DATEDIFF(month, [DATUM], GETDATE()) > @p1)', [1]],
    // week and quarter as the boundary counts they are (Babelfish's DATEDIFF counts them otherwise)
    [
      "DATEDIFF(wk, '2024-01-01', DEN) = 2",
      '((DATEDIFF(day, CAST(@p1 AS DATE), [DEN]) / 7 - DATEDIFF(day, CAST(@p2 AS DATE), @p3) / 7) = @p4)',
      ['0001-01-07', '0001-01-07', '2024-01-01', 2],
    ],
    [
      'DATEDIFF(q, DEN, DATUM) = 1',
      '(((YEAR([DATUM]) * 4 + (MONTH([DATUM]) - 1) / 3) - (YEAR([DEN]) * 4 + (MONTH([DEN]) - 1) / 3)) = @p1)',
      [1],
    ],
    ['DATEDIFF(ss, DATUM, DATUM) = 0', '(DATEDIFF(second, [DATUM], [DATUM]) = @p1)', [0]],
    // dayofyear and weekday count as day in DATEADD/DATEDIFF (SQL Server); written so Babelfish runs them too
    ['DATEDIFF(weekday, DATUM, DATUM) = 0', '(DATEDIFF(day, [DATUM], [DATUM]) = @p1)', [0]],
    ['DATEDIFF(dy, DATUM, DATUM) = 0', '(DATEDIFF(day, [DATUM], [DATUM]) = @p1)', [0]],
    ['DATEADD(dw, 1, DEN) > DEN', '(DATEADD(day, @p1, [DEN]) > [DEN])', [1]],
    ['DATEADD(dayofyear, 1, DEN) > DEN', '(DATEADD(day, @p1, [DEN]) > [DEN])', [1]],
    ['ABS(CENA) > 1', '(ABS([CENA]) > @p1)', [1]],
    ['ROUND(CENA, 1) = 1.5', '(ROUND([CENA], @p1) = CAST(@p2 AS DECIMAL(2,1)))', [1, '1.5']],
    // CAST / CONVERT
    ['CAST(CENA AS int) = 1', '(CAST([CENA] AS INT) = @p1)', [1]],
    ['CAST(CENA AS decimal(10, 2)) = 1', '(CAST([CENA] AS DECIMAL(10,2)) = @p1)', [1]],
    ["CAST(ID AS nvarchar(max)) = '1'", '(CAST([ID] AS NVARCHAR(MAX)) = @p1)', ['1']],
    ["CAST(ID AS varchar) = '1'", '(CAST([ID] AS VARCHAR) = @p1)', ['1']],
    ["CONVERT(date, DATUM) = '2024-01-01'", '(CONVERT(DATE, [DATUM]) = @p1)', ['2024-01-01']],
    // A date-time in a style, as T-SQL Babelfish runs alike: the date part for date styles, the
    // time part for 108, both for 120 (Babelfish ignores a style for a date-time value).
    [
      "CONVERT(varchar(10), DATUM, 104) = '15.01.2024'",
      '(CONVERT(VARCHAR(10), CONVERT(VARCHAR(10), CAST([DATUM] AS DATE), 104)) = @p1)',
      ['15.01.2024'],
    ],
    [
      "CONVERT(varchar(8), DATUM, 108) = '10:30:00'",
      '(CONVERT(VARCHAR(8), CONVERT(VARCHAR(8), CAST([DATUM] AS TIME), 108)) = @p1)',
      ['10:30:00'],
    ],
    [
      "CONVERT(varchar(8), DEN, 108) = '00:00:00'",
      '(CONVERT(VARCHAR(8), CONVERT(VARCHAR(8), CAST(CAST([DEN] AS DATETIME2) AS TIME), 108)) = @p1)',
      ['00:00:00'],
    ],
    [
      "CONVERT(varchar(19), DATUM, 120) = '2024-01-15 10:30:00'",
      '(CONVERT(VARCHAR(19), (CONVERT(VARCHAR(10), CAST([DATUM] AS DATE), 23) + CHAR(32) + CONVERT(VARCHAR(8), CAST([DATUM] AS TIME), 108))) = @p1)',
      ['2024-01-15 10:30:00'],
    ],
    [
      "CONVERT(varchar(10), DEN, 120) = '2024-01-15'",
      '(CONVERT(VARCHAR(10), CONVERT(VARCHAR(10), CAST([DEN] AS DATE), 23)) = @p1)',
      ['2024-01-15'],
    ],
    [
      "CONVERT(varchar(10), DATUM, 101) = '01/15/2024'",
      '(CONVERT(VARCHAR(10), CONVERT(VARCHAR(10), CAST([DATUM] AS DATE), 101)) = @p1)',
      ['01/15/2024'],
    ],
    [
      "CONVERT(varchar(8), DATUM, 1) = '01/15/24'",
      '(CONVERT(VARCHAR(8), CONVERT(VARCHAR(10), CAST([DATUM] AS DATE), 1)) = @p1)',
      ['01/15/24'],
    ],
    [
      "CONVERT(varchar(8), DATUM, 8) = '10:30:00'",
      '(CONVERT(VARCHAR(8), CONVERT(VARCHAR(8), CAST([DATUM] AS TIME), 108)) = @p1)',
      ['10:30:00'],
    ],
    [
      "CONVERT(varchar(19), DATUM, 20) = '2024-01-15 10:30:00'",
      '(CONVERT(VARCHAR(19), (CONVERT(VARCHAR(10), CAST([DATUM] AS DATE), 23) + CHAR(32) + CONVERT(VARCHAR(8), CAST([DATUM] AS TIME), 108))) = @p1)',
      ['2024-01-15 10:30:00'],
    ],
    [
      "CONVERT(datetime2(3), '2024-01-02T10:11:12.345', 126) > DATUM",
      '(CONVERT(DATETIME2(3), @p1, 126) > [DATUM])',
      ['2024-01-02T10:11:12.345'],
    ],
    [
      "CONVERT(datetime2(3), '01.02.2024', 104) > DATUM",
      '(CONVERT(DATETIME2(3), @p1, 104) > [DATUM])',
      ['01.02.2024'],
    ],
    ["CAST(GUID AS char(36)) = 'x'", '(CAST([GUID] AS CHAR(36)) = @p1)', ['x']],
    [
      "CAST('6F9619FF-8B86-D011-B42D-00C04FC964FF' AS uniqueidentifier) = GUID",
      '(CAST(@p1 AS UNIQUEIDENTIFIER) = [GUID])',
      ['6F9619FF-8B86-D011-B42D-00C04FC964FF'],
    ],
    [
      'CAST(ID AS bigint) + CAST(ID AS smallint) + CAST(ID AS tinyint) + CAST(ID AS bit) + CAST(ID AS float) + CAST(ID AS real) + CAST(ID AS money) + CAST(ID AS numeric(5)) = 1',
      '((((((((CAST([ID] AS BIGINT) + CAST([ID] AS SMALLINT)) + CAST([ID] AS TINYINT)) + CAST([ID] AS BIT)) + CAST([ID] AS FLOAT)) + CAST([ID] AS REAL)) + CAST([ID] AS MONEY)) + CAST([ID] AS NUMERIC(5))) = @p1)',
      [1],
    ],
    ["CAST(NAZEV AS nchar(5)) = 'x'", '(CAST([NAZEV] AS NCHAR(5)) = @p1)', ['x']],
    [
      "CAST(DATUM AS time) = '10:00' AND CAST(DATUM AS datetime) = DATUM",
      '((CAST([DATUM] AS TIME) = @p1) AND (CAST([DATUM] AS DATETIME) = [DATUM]))',
      ['10:00'],
    ],
    ['CAST(NULL AS int) IS NULL', '(CAST(NULL AS INT) IS NULL)', []],
  ];

  it.each(cases)('%s', (condition, sql, params) => {
    expect(compile(condition)).toEqual({ sql, params });
  });

  it('numbers placeholders from firstParamIndex', () => {
    expect(compile("NAZEV = 'a' OR ID IN (1, 2)", 4)).toEqual({
      sql: '(([NAZEV] = @p4) OR ([ID] IN (@p5, @p6)))',
      params: ['a', 1, 2],
    });
  });

  it('keeps every literal out of the SQL text', () => {
    const { sql, params } = compile("NAZEV = 'Robert''); DROP TABLE Students;--' AND CENA = 0.1");
    expect(sql).toBe('(([NAZEV] = @p1) AND ([CENA] = CAST(@p2 AS DECIMAL(1,1))))');
    expect(params).toEqual(["Robert'); DROP TABLE Students;--", '0.1']);
  });
});
