/**
 * SQL Server output: the checked condition written back as T-SQL, every sub-expression in
 * parentheses and every literal a parameter. Decimal literals are sent as their exact text and
 * cast to the `DECIMAL(p,s)` T-SQL gives the literal, so `1234.50` stays `1234.50`.
 */

import type { Condition, DateDiff, DatePart, Expr, SqlType } from '../../core/condition/ast.js';
import { type ConditionTranslator, dialectTranslator, type ParamSink } from '../../core/condition/index.js';
import { limitSize } from '../../core/condition/params.js';
import { numericTypeOf } from '../../core/condition/typing.js';
import { mssqlDialect } from './dialect.js';

/** CONVERT styles that write the date alone (two- or four-digit years). */
const DATE_ONLY_STYLES: ReadonlySet<number> = new Set([
  1, 101, 2, 102, 3, 103, 4, 104, 5, 105, 10, 110, 11, 111, 12, 112, 23,
]);

/** Text functions whose result Babelfish compares without T-SQL's padding (see the 'call' case). */
const PADDED_TEXT_FUNCTIONS: ReadonlySet<string> = new Set([
  'LEFT',
  'RIGHT',
  'UPPER',
  'LOWER',
  // Found by the differential test's random seed 1699549269 ('Brno ' IN (TRIM(UPPER(MESTO)))).
  'TRIM',
  'LTRIM',
  'RTRIM',
]);

const isLiteral = (node: Expr) =>
  node.type === 'number' ||
  node.type === 'string' ||
  (node.type === 'unary' && node.operand.type === 'number');

export function typeSql(type: SqlType): string {
  if (type.max) return `${type.name}(MAX)`;
  return type.args.length > 0 ? `${type.name}(${type.args.join(',')})` : type.name;
}

/**
 * The date part as DATEADD / DATEDIFF take it. In them SQL Server counts `dayofyear` and `weekday`
 * exactly as `day`; written as `day`, Babelfish (which refuses `weekday` there) runs them too.
 */
function arithmeticPart(part: DatePart): DatePart {
  return part === 'dayofyear' || part === 'weekday' ? 'day' : part;
}

export class MssqlCompiler {
  constructor(private readonly sink: ParamSink) {}

  condition(node: Condition): string {
    return limitSize(this.conditionSql(node));
  }

  private conditionSql(node: Condition): string {
    const not = (negated: boolean) => (negated ? 'NOT ' : '');
    switch (node.type) {
      case 'compare':
        return `(${this.expr(node.left)} ${node.op} ${this.expr(node.right)})`;
      case 'like': {
        const operand = this.expr(node.operand);
        const pattern = this.expr(node.pattern);
        const escapeClause = node.escape ? ` ESCAPE ${this.expr(node.escape)}` : '';
        return `(${operand} ${not(node.negated)}LIKE ${pattern}${escapeClause})`;
      }
      case 'in':
        return `(${this.expr(node.operand)} ${not(node.negated)}IN (${node.items.map((item) => this.expr(item)).join(', ')}))`;
      case 'between':
        return `(${this.expr(node.operand)} ${not(node.negated)}BETWEEN ${this.expr(node.low)} AND ${this.expr(node.high)})`;
      case 'isnull':
        return `(${this.expr(node.operand)} IS ${not(node.negated)}NULL)`;
      case 'and':
      case 'or':
        return `(${node.items.map((item) => this.conditionSql(item)).join(node.type === 'and' ? ' AND ' : ' OR ')})`;
      case 'not':
        return `(NOT ${this.conditionSql(node.operand)})`;
    }
  }

  /**
   * A date or date-time as text in a CONVERT style, written as T-SQL that both SQL Server and
   * Babelfish run alike: Babelfish applies a style to a `date` or `time` but ignores it for a
   * date-time (and answers NULL for style 108 of a date), SQL Server applies it to all. So the
   * date-only styles convert the date part, 8/108 the time part, and 20/120 join the two; the text
   * is the one SQL Server makes of the original value. The styles with fractions (21, 121, 126) are
   * refused for date/time values by the parser.
   */
  private styledDate(operand: Expr, style: number): string {
    // Each use emits the operand again (with fresh parameters), so placeholders and params match.
    const datePart = () => `CAST(${this.expr(operand)} AS DATE)`;
    const timePart = () =>
      operand.kind === 'date'
        ? `CAST(CAST(${this.expr(operand)} AS DATETIME2) AS TIME)`
        : `CAST(${this.expr(operand)} AS TIME)`;
    switch (style) {
      case 8:
      case 108:
        return `CONVERT(VARCHAR(8), ${timePart()}, 108)`;
      case 20:
      case 120:
        return operand.kind === 'date'
          ? `CONVERT(VARCHAR(10), ${datePart()}, 23)`
          : `(CONVERT(VARCHAR(10), ${datePart()}, 23) + CHAR(32) + CONVERT(VARCHAR(8), ${timePart()}, 108))`;
      default:
        return DATE_ONLY_STYLES.has(style)
          ? `CONVERT(VARCHAR(10), ${datePart()}, ${style})`
          : `${this.expr(operand)}, ${style}`;
    }
  }

  /**
   * DATEDIFF counts the boundaries crossed. `week` (Sundays, whatever DATEFIRST) and `quarter` are
   * written as the counts they are, since Babelfish counts them differently (ISO weeks, whole
   * quarters between); the other parts as DATEDIFF itself. Each use emits the operand again.
   */
  private dateDiff(node: DateDiff): string {
    const start = () => this.expr(node.start);
    const end = () => this.expr(node.end);
    switch (node.part) {
      case 'week': {
        // Days since a Sunday before any date (0001-01-07), in whole weeks: the Sundays passed.
        const sunday = () => `CAST(${this.sink.add('0001-01-07')} AS DATE)`;
        return `(DATEDIFF(day, ${sunday()}, ${end()}) / 7 - DATEDIFF(day, ${sunday()}, ${start()}) / 7)`;
      }
      case 'quarter': {
        const quarters = (date: () => string) => `(YEAR(${date()}) * 4 + (MONTH(${date()}) - 1) / 3)`;
        return `(${quarters(end)} - ${quarters(start)})`;
      }
      default:
        return `DATEDIFF(${arithmeticPart(node.part)}, ${start()}, ${end()})`;
    }
  }

  /**
   * A computed LEFT/RIGHT length that fails when negative on every T-SQL engine: SQL Server refuses
   * it (error 536), Babelfish would read it as PostgreSQL's "all but n". SUBSTRING refuses a negative
   * length on both (537; Babelfish's generic error) and adds nothing otherwise (0 times a length;
   * NULL stays NULL). A literal length was checked when parsed.
   */
  private checkedLength(length: Expr): string {
    return `(${this.expr(length)} + 0 * LEN(SUBSTRING(${this.sink.add('')}, 1, ${this.expr(length)})))`;
  }

  private expr(node: Expr): string {
    return limitSize(this.exprSql(node));
  }

  private exprSql(node: Expr): string {
    switch (node.type) {
      case 'column':
        return mssqlDialect.quoteIdent(node.name);
      case 'string':
        return this.sink.add(node.value);
      case 'number':
        return node.isInt
          ? this.sink.add(Number(node.text))
          : `CAST(${this.sink.add(node.text)} AS DECIMAL(${node.precision},${node.scale}))`;
      case 'null':
        return 'NULL';
      case 'unary':
        return `(-${this.expr(node.operand)})`;
      case 'binary':
        return `(${this.expr(node.left)} ${node.op} ${this.expr(node.right)})`;
      case 'call': {
        const call =
          (node.name === 'LEFT' || node.name === 'RIGHT') && !isLiteral(node.args[1]!)
            ? `${node.name}(${this.expr(node.args[0]!)}, ${this.checkedLength(node.args[1]!)})`
            : `${node.name}(${node.args.map((arg) => this.expr(arg)).join(', ')})`;
        // Babelfish answers these with PostgreSQL text, which compares trailing blanks (' ' <> '');
        // as NVARCHAR they compare as T-SQL text does on both engines (docs/sql-server.md, "Verified where").
        if (PADDED_TEXT_FUNCTIONS.has(node.name)) return `CAST(${call} AS NVARCHAR(MAX))`;
        // T-SQL gives COALESCE the highest type of its arguments; Babelfish gives it the first's
        // (`COALESCE(100.00, ID, CAST(ID AS FLOAT))` as text: '100' on SQL Server, '100.00' there).
        // A FLOAT made explicit is the same value on SQL Server (docs/sql-server.md, "Verified where").
        return node.name === 'COALESCE' && numericTypeOf(node) === 'FLOAT' ? `CAST(${call} AS FLOAT)` : call;
      }
      case 'dateadd':
        return `DATEADD(${arithmeticPart(node.part)}, ${this.expr(node.amount)}, ${this.expr(node.date)})`;
      case 'datediff':
        return this.dateDiff(node);
      case 'cast':
        if (node.syntax === 'CAST') return `CAST(${this.expr(node.operand)} AS ${typeSql(node.target)})`;
        if (node.style !== undefined && (node.operand.kind === 'datetime' || node.operand.kind === 'date')) {
          return `CONVERT(${typeSql(node.target)}, ${this.styledDate(node.operand, node.style)})`;
        }
        return `CONVERT(${typeSql(node.target)}, ${this.expr(node.operand)}${node.style === undefined ? '' : `, ${node.style}`})`;
    }
  }
}

/** Translates a checked condition to T-SQL. */
export const translateMssqlCondition: ConditionTranslator = dialectTranslator(
  mssqlDialect.param,
  (condition, sink) => new MssqlCompiler(sink).condition(condition),
);
