/**
 * PostgreSQL output with SQL Server semantics:
 * - operands of comparisons, IN and BETWEEN are converted to their common kind as T-SQL would
 *   (text literal vs datetime column: the literal becomes a timestamp, ...); text comparisons
 *   are case-insensitive (`lower(a) = lower(b)`), LIKE becomes ILIKE (or `~*` for patterns with
 *   `[...]` classes);
 * - T-SQL functions become their PostgreSQL equivalents (ISNULL → COALESCE, LEN → length(rtrim),
 *   DATEDIFF counts boundaries like T-SQL, ...);
 * - every parameter carries an explicit CAST, because PGlite sends untyped text parameters.
 * The output never contains a quote: formats and patterns are parameters too.
 */

import type {
  Call,
  Cast,
  Condition,
  DateAdd,
  DateDiff,
  DatePart,
  Expr,
  Kind,
  SqlType,
} from '../../core/condition/ast.js';
import { ConditionError } from '../../core/condition/errors.js';
import { type ConditionTranslator, dialectTranslator, type ParamSink } from '../../core/condition/index.js';
import { translateLikePattern } from '../../core/condition/like-pattern.js';
import { FIRST_YEAR } from '../../core/condition/literal-values.js';
import { limitSize } from '../../core/condition/params.js';
import { commonKind, numericTypeOf } from '../../core/condition/typing.js';
import { embeddedDialect } from './dialect.js';

/** An operand of an integer type (TINYINT to BIGINT) in T-SQL's typing. */
/**
 * Whether PostgreSQL writes this number's text as SQL Server does, so that its width can be held
 * against a text type's length: integers, a decimal column or literal (its own scale on both), its
 * negation, a CAST to a decimal of a given scale. A float (six significant digits on SQL Server)
 * and decimal arithmetic (a quotient's or a ROUND's scale follows other rules on each) are not:
 * their text is cut as before (docs/sql-server.md).
 */
function writtenAsSqlServer(node: Expr): boolean {
  const type = numericTypeOf(node);
  if (type !== undefined) return type !== 'FLOAT';
  switch (node.type) {
    case 'column':
    case 'number':
      return true;
    case 'unary':
      return writtenAsSqlServer(node.operand);
    case 'cast':
      return (
        (node.target.name === 'DECIMAL' || node.target.name === 'NUMERIC') && node.target.args.length > 0
      );
    default:
      return false;
  }
}

function isInteger(node: Expr): boolean {
  const type = numericTypeOf(node);
  return node.kind === 'number' && type !== undefined && type !== 'FLOAT';
}

/** The PostgreSQL `to_char` / `to_timestamp` format of each CONVERT style of the language (`CONVERT_STYLES`). */
export const CONVERT_FORMATS: ReadonlyMap<number, string> = new Map([
  [1, 'MM/DD/YY'],
  [101, 'MM/DD/YYYY'],
  [2, 'YY.MM.DD'],
  [102, 'YYYY.MM.DD'],
  [3, 'DD/MM/YY'],
  [103, 'DD/MM/YYYY'],
  [4, 'DD.MM.YY'],
  [104, 'DD.MM.YYYY'],
  [5, 'DD-MM-YY'],
  [105, 'DD-MM-YYYY'],
  [8, 'HH24:MI:SS'],
  [108, 'HH24:MI:SS'],
  [10, 'MM-DD-YY'],
  [110, 'MM-DD-YYYY'],
  [11, 'YY/MM/DD'],
  [111, 'YYYY/MM/DD'],
  [12, 'YYMMDD'],
  [112, 'YYYYMMDD'],
  [20, 'YYYY-MM-DD HH24:MI:SS'],
  [120, 'YYYY-MM-DD HH24:MI:SS'],
  [21, 'YYYY-MM-DD HH24:MI:SS.MS'],
  [121, 'YYYY-MM-DD HH24:MI:SS.MS'],
  [23, 'YYYY-MM-DD'],
  [126, 'YYYY-MM-DD"T"HH24:MI:SS.MS'],
]);

/** PostgreSQL type a value of `kind` is cast to. */
function pgType(kind: Kind): string {
  switch (kind) {
    case 'string':
      return 'text';
    case 'number':
      return 'numeric';
    case 'datetime':
      return 'timestamp';
    case 'date':
      return 'date';
    case 'time':
      return 'time';
    case 'guid':
      return 'uuid';
    case 'bool':
      return 'boolean';
    default:
      return 'text';
  }
}

/** PostgreSQL spelling of a CAST / CONVERT target type. */
export function pgTargetType(type: SqlType): string {
  const [first, second] = type.args;
  switch (type.name) {
    case 'INT':
    case 'BIT':
      return 'integer';
    case 'BIGINT':
      return 'bigint';
    case 'SMALLINT':
    case 'TINYINT':
      return 'smallint';
    case 'DECIMAL':
    case 'NUMERIC':
      return `numeric(${first ?? 18},${second ?? 0})`;
    case 'FLOAT':
      return first !== undefined && first <= 24 ? 'real' : 'double precision';
    case 'REAL':
      return 'real';
    case 'MONEY':
      return 'numeric(19,4)';
    case 'VARCHAR':
    case 'NVARCHAR':
      return type.max ? 'text' : `varchar(${first ?? 30})`;
    case 'CHAR':
    case 'NCHAR':
      return `char(${first ?? 30})`;
    case 'DATE':
      return 'date';
    case 'DATETIME':
      return 'timestamp(0)';
    case 'DATETIME2':
      // SQL Server's DATETIME2 without a precision is DATETIME2(7); PostgreSQL holds six digits.
      return `timestamp(${Math.min(first ?? 7, 6)})`;
    case 'TIME':
      return first === undefined ? 'time' : `time(${Math.min(first, 6)})`;
    case 'UNIQUEIDENTIFIER':
      return 'uuid';
  }
}

const INTERVAL_FIELDS: Readonly<Record<DatePart, string>> = {
  year: 'years',
  quarter: 'months',
  month: 'months',
  dayofyear: 'days',
  day: 'days',
  week: 'weeks',
  weekday: 'days',
  hour: 'hours',
  minute: 'mins',
  second: 'secs',
};

/**
 * The to_timestamp format reading text in a CONVERT style. Like T-SQL, a time after the date and
 * milliseconds after the seconds are optional (to_timestamp ignores format fields past the input).
 */
function parseFormat(style: string): string {
  if (!style.includes('HH24')) return `${style} HH24:MI:SS.MS`;
  return style.includes('.MS') ? style : `${style}.MS`;
}

/** A literal operand, whose conversions were checked against SQL Server's rules when parsed. */
const isLiteral = (node: Expr) =>
  node.type === 'number' ||
  node.type === 'string' ||
  (node.type === 'unary' && node.operand.type === 'number');

const INTEGER_TYPES: ReadonlySet<string> = new Set(['INT', 'BIGINT', 'SMALLINT', 'TINYINT']);

function internal(message: string): never {
  throw new ConditionError(`The condition cannot be translated: ${message} (position 1)`, 1);
}

export class EmbeddedCompiler {
  constructor(private readonly sink: ParamSink) {}

  condition(node: Condition): string {
    return limitSize(this.conditionSql(node));
  }

  // --- conditions ------------------------------------------------------------------------------------

  private conditionSql(node: Condition): string {
    const not = (negated: boolean) => (negated ? 'NOT ' : '');
    switch (node.type) {
      case 'compare': {
        const kind = commonKind([node.left.kind, node.right.kind], internal);
        return this.meeting(
          [node.left, node.right],
          () => `(${this.side(node.left, kind)} ${node.op} ${this.side(node.right, kind)})`,
        );
      }
      case 'like':
        return this.like(node.operand, node.pattern, node.escape?.value, node.negated);
      case 'in': {
        const kind = commonKind([node.operand.kind, ...node.items.map((item) => item.kind)], internal);
        return this.meeting([node.operand, ...node.items], () => {
          const operand = this.side(node.operand, kind);
          const items = node.items.map((item) => this.side(item, kind)).join(', ');
          return `(${operand} ${not(node.negated)}IN (${items}))`;
        });
      }
      case 'between': {
        const kind = commonKind([node.operand.kind, node.low.kind, node.high.kind], internal);
        return this.meeting(
          [node.operand, node.low, node.high],
          () =>
            `(${this.side(node.operand, kind)} ${not(node.negated)}BETWEEN ${this.side(node.low, kind)} AND ${this.side(node.high, kind)})`,
        );
      }
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
   * An operand of a comparison converted to `kind`. Text compares as under SQL Server's default
   * collation: case-insensitively, trailing spaces ignored (`'FV' = 'FV '`), and ordered by the
   * Unicode collation (`'Česká' < 'h'`), not by code points. Case is folded by ICU's full
   * lower-case mapping, as the engine folds it: PostgreSQL's own `lower` maps `İ` (U+0130) to `i`
   * alone, which made `N'I' = N'İ'` true, where SQL Server's accent-sensitive collation keeps the
   * two apart (`N'I' < N'İ'`).
   */
  private side(node: Expr, kind: Kind): string {
    return kind === 'string'
      ? `rtrim(lower((${this.as(node, 'string')}) COLLATE "und-x-icu"))`
      : this.as(node, kind);
  }

  /**
   * LIKE as SQL Server matches: trailing blanks of the value are ignored (`'FV ' LIKE 'FV'`), those
   * of the pattern are not; so the value matches as it is or without them. Each try emits the
   * operands again (fresh parameters).
   */
  private like(operand: Expr, pattern: Expr, escapeChar: string | undefined, negated: boolean): string {
    const match = (value: string) => {
      if (pattern.type === 'string') {
        const translated = translateLikePattern(pattern.value, escapeChar);
        const param = this.text(translated.pattern);
        return translated.operator === 'regex' ? `(${value} ~* ${param})` : `(${value} ILIKE ${param})`;
      }
      // A computed pattern: T-SQL has no default escape character, PostgreSQL has `\`.
      const computed = this.as(pattern, 'string');
      return `(${value} ILIKE ${computed} ESCAPE ${this.text(escapeChar ?? '')})`;
    };
    const either = `(${match(this.as(operand, 'string'))} OR ${match(`rtrim(${this.as(operand, 'string')})`)})`;
    return negated ? `(NOT ${either})` : either;
  }

  // --- values ------------------------------------------------------------------------------------------

  private text(value: string): string {
    return `CAST(${this.sink.add(value)} AS text)`;
  }

  private expr(node: Expr): string {
    return limitSize(this.exprSql(node));
  }

  private exprSql(node: Expr): string {
    switch (node.type) {
      case 'column':
        return embeddedDialect.quoteIdent(node.name);
      case 'string':
        return this.text(node.value);
      case 'number':
        return node.isInt
          ? `CAST(${this.sink.add(Number(node.text))} AS integer)`
          : `CAST(${this.sink.add(node.text)} AS numeric)`;
      case 'null':
        return 'NULL';
      case 'unary':
        return `(-${this.as(node.operand, 'number')})`;
      case 'binary': {
        if (node.op === '%') {
          // Integers stay integers (T-SQL: int % int is an int, so `(ID / 2) % 2 / 2` divides as
          // integers); for decimals numeric gives the T-SQL result (% on FLOAT is refused earlier).
          if (isInteger(node.left) && isInteger(node.right))
            return `(${this.as(node.left, 'number')} % ${this.as(node.right, 'number')})`;
          return `(${this.modulo(node.left)} % ${this.modulo(node.right)})`;
        }
        const op = node.kind === 'string' ? '||' : node.op;
        return this.meeting(
          [node.left, node.right],
          () => `(${this.as(node.left, node.kind)} ${op} ${this.as(node.right, node.kind)})`,
        );
      }
      case 'call':
        return this.call(node);
      case 'dateadd':
        return this.dateAdd(node);
      case 'datediff':
        return this.dateDiff(node);
      case 'cast':
        return this.guardedCast(node);
    }
  }

  /** Set while operands that meet a decimal are emitted (a blank text is then no number). */
  private decimalOperands = false;

  /** `emit()` with decimalOperands set when one of `operands` is a decimal. */
  private meeting(operands: readonly Expr[], emit: () => string): string {
    const saved = this.decimalOperands;
    this.decimalOperands = operands.some(
      (operand) => operand.kind === 'number' && numericTypeOf(operand) === undefined,
    );
    try {
      return emit();
    } finally {
      this.decimalOperands = saved;
    }
  }

  /** `node` converted to `kind` the way T-SQL converts implicitly. */
  private as(node: Expr, kind: Kind): string {
    if (kind === 'null' || kind === 'unknown' || node.kind === kind) return this.expr(node);
    switch (node.type) {
      case 'string':
        // SQL Server reads an empty or blank text as the number 0 for an integer or a float
        // (`ID + ''` is ID), but refuses it for a decimal (error 8114), as PostgreSQL does.
        if (kind === 'number' && node.value.trim() === '' && !this.decimalOperands)
          return 'CAST(0 AS integer)';
        return `CAST(${this.sink.add(node.value)} AS ${pgType(kind)})`;
      case 'null':
        return `CAST(NULL AS ${pgType(kind)})`;
      case 'number':
        if (kind === 'string')
          return `CAST(${this.sink.add(node.isInt ? Number(node.text) : node.text)} AS text)`;
        break;
    }
    const sql = this.expr(node);
    const from = node.kind;
    if (from === 'unknown') return kind === 'string' ? `CAST(${sql} AS text)` : sql;
    if (kind === 'string')
      return from === 'bool' ? `CAST(CAST(${sql} AS integer) AS text)` : `CAST(${sql} AS text)`;
    if (from === 'string' || from === 'null') return `CAST(${sql} AS ${pgType(kind)})`;
    if (from === 'bool' && kind === 'number') return `CAST(${sql} AS integer)`;
    if (from === 'number' && kind === 'bool') return `(${sql} <> 0)`;
    if (from === 'date' && kind === 'datetime') return `CAST(${sql} AS timestamp)`;
    if (from === 'datetime' && kind === 'date') return `CAST(${sql} AS date)`;
    return internal(`cannot convert ${from} to ${kind}`);
  }

  private modulo(node: Expr): string {
    return node.type === 'number' ? this.expr(node) : `CAST(${this.as(node, 'number')} AS numeric)`;
  }

  /** An integer argument (lengths, positions, DATEADD amounts); T-SQL truncates decimals. */
  private integer(node: Expr): string {
    if (node.type === 'number' && node.isInt) return this.expr(node);
    if (node.type === 'unary' && node.operand.type === 'number' && node.operand.isInt) return this.expr(node);
    return `CAST(trunc(CAST(${this.as(node, 'number')} AS numeric)) AS integer)`;
  }

  /** A date argument as a date or timestamp (text is read as a timestamp, like T-SQL does). */
  private temporal(node: Expr): string {
    return node.kind === 'date' || node.kind === 'datetime' || node.kind === 'time' || node.kind === 'unknown'
      ? this.expr(node)
      : this.as(node, 'datetime');
  }

  private call(node: Call): string {
    const arg = (i: number) => node.args[i]!;
    const str = (i: number) => this.as(arg(i), 'string');
    switch (node.name) {
      case 'ISNULL': {
        // T-SQL gives ISNULL the first argument's type: an integer first argument makes the
        // replacement an integer too (truncated), so ISNULL(ID, 2.5) / 2 stays integer division.
        const type = node.kind === 'number' && arg(0).kind === 'number' ? numericTypeOf(arg(0)) : undefined;
        if (type !== undefined && type !== 'FLOAT') {
          const pg = pgTargetType({ name: type, args: [], max: false });
          return `COALESCE(${this.expr(arg(0))}, CAST(trunc(CAST(${this.as(arg(1), 'number')} AS numeric)) AS ${pg}))`;
        }
        return `COALESCE(${node.args.map((a) => this.as(a, node.kind)).join(', ')})`;
      }
      case 'COALESCE':
        return `COALESCE(${node.args.map((a) => this.as(a, node.kind)).join(', ')})`;
      case 'UPPER':
      case 'LOWER':
      case 'LTRIM':
      case 'RTRIM':
      case 'TRIM':
        return `${node.name.toLowerCase()}(${str(0)})`;
      case 'LEN':
        return `length(rtrim(${str(0)}))`;
      case 'SUBSTRING':
        return `substr(${str(0)}, ${this.integer(arg(1))}, ${this.integer(arg(2))})`;
      case 'LEFT':
      case 'RIGHT': {
        // PostgreSQL reads a negative length as "all but the last/first n"; T-SQL refuses it
        // (errors 536/537). A literal was checked when parsed; a computed one meets substr, which
        // refuses a negative length too (22011), and adds nothing otherwise.
        const length = () => this.integer(arg(1));
        const guarded =
          isLiteral(arg(1)) || this.guarding
            ? length()
            : `(${length()} + 0 * length(substr(${this.text('')}, 1, ${length()})))`;
        return `${node.name.toLowerCase()}(${str(0)}, ${guarded})`;
      }
      case 'YEAR':
      case 'MONTH':
      case 'DAY':
        return `CAST(EXTRACT(${node.name} FROM ${this.temporal(arg(0))}) AS integer)`;
      case 'GETDATE':
        return 'LOCALTIMESTAMP';
      case 'ABS':
        return `abs(${this.as(arg(0), 'number')})`;
      case 'ROUND':
        return `round(CAST(${this.as(arg(0), 'number')} AS numeric), ${this.integer(arg(1))})`;
    }
  }

  private dateAdd(node: DateAdd): string {
    const value = () => {
      const amount = this.integer(node.amount);
      const interval = `make_interval(${INTERVAL_FIELDS[node.part]} => ${node.part === 'quarter' ? `(${amount} * 3)` : amount})`;
      const sum = `(${this.temporal(node.date)} + ${interval})`;
      return node.kind === 'date' ? `CAST(${sum} AS date)` : sum;
    };
    // T-SQL: "Adding a value to a 'datetime' column caused an overflow" (517) past 9999 or before year 1.
    if (node.kind !== 'date' && node.kind !== 'datetime') return value();
    // A text date is read as `datetime`, and so is the answer: years from 1753 (SQL Server's error 517 before).
    const fromText = node.date.kind === 'string' || node.date.kind === 'null';
    return this.dateRangeGuard(value, node.kind, fromText ? FIRST_YEAR.DATETIME : FIRST_YEAR.other);
  }

  /** Set while a guarded value is emitted: guards inside it are left out, so nesting cannot double the SQL again and again. */
  private guarding = false;

  /**
   * `value()` unchanged, or an arithmetic overflow (22003, answered as a value out of range) when
   * it is not between `low` and `high`: T-SQL's range errors, which PostgreSQL's wider types would
   * not raise. The value is emitted twice, each time with its own parameters.
   */
  private rangeGuard(
    value: () => string,
    low: () => string,
    high: () => string,
    kind: 'number' | 'date' | 'datetime',
  ): string {
    if (this.guarding) return value();
    this.guarding = true;
    try {
      const kept = value();
      const overflow = `0 * CAST(32767 + CAST((NOT (${value()} BETWEEN ${low()} AND ${high()})) AS integer) AS smallint)`;
      return kind === 'datetime'
        ? `(${kept} + make_interval(days => ${overflow}))`
        : `(${kept} + ${overflow})`;
    } finally {
      this.guarding = false;
    }
  }

  /**
   * The text of a number cast to a character type of `length`, where SQL Server does not cut it:
   * too wide, an `int`, `smallint` or `tinyint` becomes `*` in `char`/`varchar`, and every other
   * number (`bigint`, decimals, money) and every `nchar`/`nvarchar` target fails with an
   * arithmetic overflow ([CAST and CONVERT, "Truncating and rounding results"](https://learn.microsoft.com/en-us/sql/t-sql/functions/cast-and-convert-transact-sql#truncating-and-rounding-results)).
   * PostgreSQL cuts it. The failure is a smallint out of range (22003, the 400 that SQL Server's
   * 8115 gives) computed from the text itself, so that PostgreSQL cannot fold it while planning
   * unless the number is a constant too wide, which SQL Server refuses as well. As in
   * `rangeGuard`, the number is written twice, and not checked again inside itself.
   */
  private numberText(operand: Expr, length: number, target: string): string {
    const text = () => this.as(operand, 'string');
    if (this.guarding) return text();
    this.guarding = true;
    try {
      const kept = text();
      const tooWide = `(length(${text()}) > ${length})`;
      const type = numericTypeOf(operand);
      const stars =
        (target === 'CHAR' || target === 'VARCHAR') &&
        (type === 'INT' || type === 'SMALLINT' || type === 'TINYINT');
      if (stars) return `(CASE WHEN ${tooWide} THEN ${this.text('*')} ELSE ${kept} END)`;
      const overflow = `CAST(32767 + CAST(${tooWide} AS integer) AS smallint)`;
      return `(${kept} || substr(CAST(${overflow} AS text), 1, 0))`;
    } finally {
      this.guarding = false;
    }
  }

  /** A date or timestamp guarded to the years `firstYear`..9999 of SQL Server's types. */
  private dateRangeGuard(value: () => string, kind: 'date' | 'datetime', firstYear: number): string {
    const type = kind === 'date' ? 'date' : 'timestamp';
    const bound = (date: string) => `CAST(${this.sink.add(date)} AS ${type})`;
    const first = `${String(firstYear).padStart(4, '0')}-01-01`;
    // Bounds are emitted lazily, so that parameters are added in the order they appear.
    return this.rangeGuard(
      value,
      () => bound(first),
      () => bound('9999-12-31 23:59:59.999999'),
      kind,
    );
  }

  /** CAST / CONVERT with T-SQL's range errors for computed values (literals were checked when parsed). */
  private guardedCast(node: Cast): string {
    const value = () => this.cast(node);
    if (isLiteral(node.operand) || node.operand.kind === 'null') return value();
    if (node.target.name === 'TINYINT')
      return this.rangeGuard(
        value,
        () => '0',
        () => '255',
        'number',
      );
    if (node.kind === 'date' || node.kind === 'datetime') {
      const firstYear = node.target.name === 'DATETIME' ? FIRST_YEAR.DATETIME : FIRST_YEAR.other;
      return this.dateRangeGuard(value, node.kind, firstYear);
    }
    return value();
  }

  /** DATEDIFF counts the boundaries crossed between the two dates, as T-SQL does. */
  private dateDiff(node: DateDiff): string {
    // Each use emits the operand again (with fresh parameters), so placeholders and params match.
    const start = () => this.as(node.start, 'datetime');
    const end = () => this.as(node.end, 'datetime');
    const field = (name: string, of: () => string) => `EXTRACT(${name} FROM ${of()})`;
    const diff = (name: string) => `(${field(name, end)} - ${field(name, start)})`;
    const days = () => `(CAST(${end()} AS date) - CAST(${start()} AS date))`;
    const intField = (name: string, of: () => string) => `CAST(${field(name, of)} AS integer)`;
    const hours = () => `(${days()} * 24 + ${intField('HOUR', end)} - ${intField('HOUR', start)})`;
    const minutes = () => `(${hours()} * 60 + ${intField('MINUTE', end)} - ${intField('MINUTE', start)})`;
    switch (node.part) {
      case 'year':
        return `CAST(${diff('YEAR')} AS integer)`;
      case 'quarter':
        return `CAST(${diff('YEAR')} * 4 + ${diff('QUARTER')} AS integer)`;
      case 'month':
        return `CAST(${diff('YEAR')} * 12 + ${diff('MONTH')} AS integer)`;
      case 'dayofyear':
      case 'day':
      case 'weekday':
        return days();
      case 'week':
        // Weeks start on Sunday for DATEDIFF whatever DATEFIRST says; DOW is 0 on Sunday.
        return `CAST(floor((${days()} + ${field('DOW', start)}) / 7) AS integer)`;
      case 'hour':
        return hours();
      case 'minute':
        return minutes();
      case 'second':
        return `(${minutes()} * 60 + CAST(floor(${field('SECOND', end)}) AS integer) - CAST(floor(${field('SECOND', start)}) AS integer))`;
    }
  }

  private cast(node: Cast): string {
    const target = pgTargetType(node.target);
    const operand = node.operand;
    const from = operand.kind;
    if (from === 'null') return `CAST(NULL AS ${target})`;
    /** The operand as it goes into the outer CAST; a text literal goes in as a bare parameter. */
    const source = (via: Kind) =>
      operand.type === 'string'
        ? this.sink.add(operand.value)
        : from === 'unknown'
          ? this.expr(operand)
          : this.as(operand, via);
    const style = node.style === undefined ? undefined : CONVERT_FORMATS.get(node.style);
    switch (node.kind) {
      case 'string': {
        if (style !== undefined && (from === 'date' || from === 'datetime' || from === 'time')) {
          // A date has no time to write: SQL Server gives style 20/120 of a date as 'yyyy-mm-dd'.
          const dateOnly = from === 'date' && (node.style === 20 || node.style === 120);
          const format = dateOnly ? CONVERT_FORMATS.get(23)! : style;
          return `CAST(to_char(${this.expr(operand)}, ${this.text(format)}) AS ${target})`;
        }
        const length = node.target.args[0] ?? 30;
        const text =
          from === 'number' && !node.target.max && writtenAsSqlServer(operand)
            ? this.numberText(operand, length, node.target.name)
            : this.as(operand, 'string');
        if (node.target.name === 'CHAR' || node.target.name === 'NCHAR') {
          // T-SQL's CHAR(n) keeps its padding in every use (`CAST(7 AS CHAR(3)) + 'x'` is '7  x');
          // PostgreSQL's drops it as soon as it becomes text.
          return `rpad(CAST(${text} AS varchar(${length})), ${length})`;
        }
        return `CAST(${text} AS ${target})`;
      }
      case 'number': {
        if (node.target.name === 'BIT') {
          if (from === 'bool') return `CAST(${this.expr(operand)} AS integer)`;
          if (from === 'string') return `CAST(CAST(${source('string')} AS boolean) AS integer)`;
          return `CAST((${this.expr(operand)} <> 0) AS integer)`;
        }
        if (from === 'bool') return `CAST(CAST(${this.expr(operand)} AS integer) AS ${target})`;
        if (
          operand.type === 'string' &&
          operand.value.trim() === '' &&
          (INTEGER_TYPES.has(node.target.name) || node.target.name === 'FLOAT' || node.target.name === 'REAL')
        ) {
          // SQL Server: an empty or blank text is 0 as an integer or a float (not as a decimal).
          return `CAST(0 AS ${target})`;
        }
        if (from === 'string') return `CAST(${source('string')} AS ${target})`;
        if (from === 'number' && INTEGER_TYPES.has(node.target.name)) {
          // T-SQL truncates towards zero, PostgreSQL would round.
          return `CAST(trunc(CAST(${this.expr(operand)} AS numeric)) AS ${target})`;
        }
        return `CAST(${this.expr(operand)} AS ${target})`;
      }
      case 'date':
      case 'datetime':
      case 'time': {
        if (style !== undefined && from === 'string') {
          return `CAST(to_timestamp(${this.as(operand, 'string')}, ${this.text(parseFormat(style))}) AS ${target})`;
        }
        return `CAST(${from === 'string' ? source('string') : this.expr(operand)} AS ${target})`;
      }
      case 'guid':
        return `CAST(${from === 'string' ? source('string') : this.expr(operand)} AS ${target})`;
      default:
        return internal(`unexpected CAST target ${node.target.name}`);
    }
  }
}

/** Translates a checked condition to PostgreSQL. */
export const translateEmbeddedCondition: ConditionTranslator = dialectTranslator(
  embeddedDialect.param,
  (condition, sink) => new EmbeddedCompiler(sink).condition(condition),
);
