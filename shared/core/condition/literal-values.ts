/**
 * SQL Server's rules for converting literal values, checked when a condition is parsed. The
 * condition's semantics are SQL Server's on every database (CONTRACT.md section 4), and the
 * embedded PostgreSQL accepts much that SQL Server refuses: `'infinity'`, `'epoch'`, `'today'`,
 * Julian and `BC` dates for dates, `'yes'`/`'on'`/`'t'` for BIT, `0x1F` and `1_000` for numbers,
 * 300 for TINYINT (a PostgreSQL `smallint`), years beyond 9999. A literal is therefore read here
 * in the forms SQL Server reads (us_english, DATEFORMAT mdy) and refused otherwise; values
 * computed from columns are guarded in the PostgreSQL translation.
 */
import type { Expr, Kind, SqlType, SqlTypeName } from './ast.js';

type Fail = (message: string) => never;

/** Inclusive ranges of SQL Server's exact numeric types. */
export const INTEGER_RANGES: Readonly<Partial<Record<SqlTypeName, readonly [bigint, bigint]>>> = {
  TINYINT: [0n, 255n],
  SMALLINT: [-32768n, 32767n],
  INT: [-2147483648n, 2147483647n],
  BIGINT: [-9223372036854775808n, 9223372036854775807n],
};

/** MONEY: ±922,337,203,685,477.5807, in ten-thousandths. */
const MONEY_LIMIT = 9223372036854775807n;

/** The first year each date/time type holds; all end in 9999. */
export const FIRST_YEAR = { DATETIME: 1753, other: 1 } as const;

const INTEGER_TEXT = /^\s*[+-]?\d+\s*$/;
const DECIMAL_TEXT = /^\s*[+-]?(\d+\.?\d*|\.\d+)\s*$/;
const FLOAT_TEXT = /^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$/;
const GUID_TEXT =
  /^\s*(\{[0-9a-f]{8}-([0-9a-f]{4}-){3}[0-9a-f]{12}\}|[0-9a-f]{8}-([0-9a-f]{4}-){3}[0-9a-f]{12})\s*$/i;

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const MONTH_NAME =
  '(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:tember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)';
const TIME = String.raw`(\d{1,2}):(\d{2})(?::(\d{2})(?:[.:](\d{1,7}))?)?\s*([ap]m)?`;

/** The date forms of SQL Server (DATEFORMAT mdy): each gives year, month, day from its groups. */
const DATE_FORMS: readonly { pattern: string; ymd: (g: string[]) => [string, string, string] }[] = [
  { pattern: String.raw`(\d{4})-(\d{1,2})-(\d{1,2})`, ymd: (g) => [g[0]!, g[1]!, g[2]!] },
  { pattern: String.raw`(\d{4})[/.](\d{1,2})[/.](\d{1,2})`, ymd: (g) => [g[0]!, g[1]!, g[2]!] },
  { pattern: String.raw`(\d{4})(\d{2})(\d{2})`, ymd: (g) => [g[0]!, g[1]!, g[2]!] },
  { pattern: String.raw`(\d{1,2})[/.-](\d{1,2})[/.-](\d{4}|\d{2})`, ymd: (g) => [g[2]!, g[0]!, g[1]!] },
  { pattern: String.raw`${MONTH_NAME}\.?\s+(\d{1,2}),?\s+(\d{4})`, ymd: (g) => [g[2]!, g[0]!, g[1]!] },
  { pattern: String.raw`(\d{1,2})\s+${MONTH_NAME}\.?,?\s+(\d{4})`, ymd: (g) => [g[2]!, g[1]!, g[0]!] },
];

interface DateTimeParts {
  readonly year: number | undefined;
  readonly ok: boolean;
  /** Digits after the seconds (0 without a fraction). */
  readonly fractionDigits: number;
  /** Month and day of a date (undefined for a time alone). */
  readonly month?: number;
  readonly day?: number;
}

const daysIn = (year: number, month: number) => new Date(Date.UTC(year, month, 0)).getUTCDate();

function validTime(groups: readonly (string | undefined)[]): boolean {
  const [h, m, s, , meridiem] = groups;
  const hour = Number(h);
  if (meridiem !== undefined && (hour < 1 || hour > 12) && hour !== 0) return false;
  return hour <= 23 && Number(m) <= 59 && Number(s ?? 0) <= 59;
}

/** Reads a date and/or time as SQL Server does; undefined when SQL Server would not read it. */
function readDateTime(text: string): DateTimeParts | undefined {
  const value = text.trim().toLowerCase();
  const timeOnly = new RegExp(`^${TIME}$`).exec(value);
  if (timeOnly) {
    const fractionDigits = timeOnly[4]?.length ?? 0;
    return validTime(timeOnly.slice(1)) ? { year: undefined, ok: true, fractionDigits } : undefined;
  }
  for (const [index, form] of DATE_FORMS.entries()) {
    // 'T' joins the ISO form only; a trailing Z goes with it.
    const joiner = index === 0 ? '(?:\\s+|t)' : '\\s+';
    const match = new RegExp(`^${form.pattern}(?:${joiner}${TIME}(z)?)?$`).exec(value);
    if (!match) continue;
    const groups = match.slice(1);
    const dateGroups = groups.slice(0, 3) as string[];
    const [y, m, d] = form.ymd(dateGroups);
    let year = Number(y);
    if (y.length === 2) year += year < 50 ? 2000 : 1900;
    const month = /^\d+$/.test(m) ? Number(m) : MONTHS.indexOf(m.slice(0, 3)) + 1;
    const day = Number(d);
    if (month < 1 || month > 12 || day < 1 || day > daysIn(year, month)) return undefined;
    if (groups[3] !== undefined && !validTime(groups.slice(3, 8))) return undefined;
    return { year, ok: true, fractionDigits: groups[6]?.length ?? 0, month, day };
  }
  return undefined;
}

/** The value of a literal operand: the text of a string, or the digits of a (negated) number. */
function literalOf(node: Expr): { text: string; string: boolean } | undefined {
  if (node.type === 'string') return { text: node.value, string: true };
  if (node.type === 'number') return { text: node.text, string: false };
  if (node.type === 'unary' && node.operand.type === 'number')
    return { text: `-${node.operand.text}`, string: false };
  return undefined;
}

const shown = (text: string) => `'${text.slice(0, 40)}${text.length > 40 ? '…' : ''}'`;

/** Digits of an integer after T-SQL's truncation toward zero. */
function truncated(text: string): bigint {
  const [whole = '0'] = text.trim().replace(/^\+/, '').split('.');
  return BigInt(whole === '-' || whole === '' ? '0' : whole);
}

/** A literal read as a number of SQL Server type `type` (or implicitly as a number when undefined). */
function checkNumber(text: string, isString: boolean, type: SqlType | undefined, fail: Fail): void {
  const name = type?.name;
  const integer = name !== undefined && name in INTEGER_RANGES;
  const form = !isString
    ? DECIMAL_TEXT
    : integer
      ? INTEGER_TEXT
      : name === 'FLOAT' || name === 'REAL' || name === undefined
        ? FLOAT_TEXT
        : DECIMAL_TEXT;
  // An empty or blank text is 0 for SQL Server as an integer or a float (and where the type is
  // only known from the other operand: a decimal operand then fails in the database, as there).
  const blankIsZero =
    isString && text.trim() === '' && (integer || name === 'FLOAT' || name === 'REAL' || name === undefined);
  if (blankIsZero) return;
  if (isString && !form.test(text)) {
    fail(`SQL Server cannot convert the text ${shown(text)} to ${name ?? 'a number'}`);
  }
  if (integer) {
    const [low, high] = INTEGER_RANGES[name!]!;
    const value = truncated(text);
    if (value < low || value > high)
      fail(`The value ${text.trim().slice(0, 40)} is out of the range of ${name} (${low} to ${high})`);
  } else if (name === 'DECIMAL' || name === 'NUMERIC') {
    const [precision = 18, scale = 0] = type!.args;
    // Rounded to the scale first, as SQL Server does: 9.95 fits DECIMAL(2,1) only if it stays below 10.
    const magnitude = Math.abs(Number(text));
    const rounded = magnitude < 1e21 ? Number(magnitude.toFixed(scale)) : magnitude;
    const digits = rounded >= 1 ? Math.floor(Math.log10(rounded)) + 1 : 0;
    if (digits > precision - scale) {
      fail(
        `The value ${text.trim().slice(0, 40)} does not fit ${name}(${precision},${scale}) (arithmetic overflow)`,
      );
    }
  } else if (name === 'MONEY' && BigInt(Math.round(Math.abs(Number(text)) * 10000)) > MONEY_LIMIT) {
    fail(`The value ${text.trim().slice(0, 40)} is out of the range of MONEY`);
  }
}

/** A text literal read as BIT: SQL Server takes 'TRUE', 'FALSE' and integers, not 'yes', 'on' or 't'. */
function checkBit(text: string, fail: Fail): void {
  if (!/^\s*(true|false)\s*$/i.test(text) && !INTEGER_TEXT.test(text)) {
    fail(`SQL Server cannot convert the text ${shown(text)} to BIT (use 1, 0, 'TRUE' or 'FALSE')`);
  }
}

function checkTemporal(text: string, typeName: string, firstYear: number, fail: Fail): void {
  const parts = readDateTime(text);
  if (!parts) {
    fail(
      `SQL Server cannot convert the text ${shown(text)} to ${typeName} (use 'YYYY-MM-DD', 'YYYYMMDD' or 'YYYY-MM-DDThh:mm:ss')`,
    );
  }
  if (parts.year !== undefined && parts.year < firstYear) {
    fail(`The date ${shown(text)} is out of the range of ${typeName} (years ${firstYear} to 9999)`);
  }
  // datetime keeps milliseconds: SQL Server refuses a text with more fraction digits (error 241).
  if (typeName === 'DATETIME' && parts.fractionDigits > 3) {
    fail(
      `SQL Server cannot convert the text ${shown(text)} to DATETIME: it has ${parts.fractionDigits} digits of a second, DATETIME takes at most 3`,
    );
  }
}

/**
 * DATEADD reads a text literal as `datetime` (its answer is a `datetime` too, SQL Server's
 * DATEADD reference): from 1753, at most three digits of a second.
 */
export function checkDateAddLiteral(part: string, amount: Expr, node: Expr, fail: Fail): void {
  const literal = literalOf(node);
  if (!literal?.string) return;
  checkTemporal(literal.text, 'DATETIME', FIRST_YEAR.DATETIME, fail);
  // A literal amount on a literal date is a constant: outside datetime's years it is refused here,
  // whether or not the database would evaluate it (an OR may skip it on one engine, not another).
  const count = literalOf(amount);
  const parts = readDateTime(literal.text);
  if (!count || count.string || parts?.year === undefined || parts.month === undefined) return;
  const n = Math.trunc(Number(count.text));
  const date = new Date(Date.UTC(2000, parts.month - 1, parts.day ?? 1));
  date.setUTCFullYear(parts.year);
  const months = { year: 12, quarter: 3, month: 1 }[part];
  const days = {
    day: 1,
    dayofyear: 1,
    weekday: 1,
    week: 7,
    hour: 1 / 24,
    minute: 1 / 1440,
    second: 1 / 86400,
  }[part];
  if (months !== undefined) date.setUTCMonth(date.getUTCMonth() + n * months);
  else if (days !== undefined) date.setTime(date.getTime() + Math.trunc(n * days) * 86_400_000);
  const year = date.getUTCFullYear();
  if (year < FIRST_YEAR.DATETIME || year > 9999) {
    fail(
      `DATEADD(${part}, ${n}, ${shown(literal.text)}) is out of the range of DATETIME (years 1753 to 9999)`,
    );
  }
}

/** Checks a literal that an implicit conversion turns into a value of `kind`. */
export function checkImplicitLiteral(node: Expr, kind: Kind, fail: Fail): void {
  const literal = literalOf(node);
  if (!literal?.string) return;
  if (kind === 'number') checkNumber(literal.text, true, undefined, fail);
  else if (kind === 'bool') checkBit(literal.text, fail);
  else if (kind === 'date' || kind === 'datetime' || kind === 'time') {
    checkTemporal(literal.text, kind, FIRST_YEAR.other, fail);
  } else if (kind === 'guid' && !GUID_TEXT.test(literal.text)) {
    fail(`SQL Server cannot convert the text ${shown(literal.text)} to uniqueidentifier`);
  }
}

/** Checks a literal operand of CAST / CONVERT against its target type (without a CONVERT style). */
export function checkCastLiteral(node: Expr, target: SqlType, kind: Kind, fail: Fail): void {
  const literal = literalOf(node);
  if (!literal) return;
  if (kind === 'number') {
    if (target.name !== 'BIT') checkNumber(literal.text, literal.string, target, fail);
    else if (literal.string) checkBit(literal.text, fail);
  } else if (!literal.string) {
    // Numbers convert to text only.
  } else if (kind === 'date' || kind === 'datetime' || kind === 'time') {
    const firstYear = target.name === 'DATETIME' ? FIRST_YEAR.DATETIME : FIRST_YEAR.other;
    checkTemporal(literal.text, target.name, firstYear, fail);
  } else if (kind === 'guid') {
    checkImplicitLiteral(node, 'guid', fail);
  }
}

/** LEFT, RIGHT and SUBSTRING refuse a negative length (SQL Server errors 536 and 537). */
export function checkLengthLiteral(node: Expr, name: string, fail: Fail): void {
  const literal = literalOf(node);
  if (literal && Number(literal.text) < 0 && (!literal.string || DECIMAL_TEXT.test(literal.text))) {
    fail(
      `A negative length (${literal.text.trim().slice(0, 20)}) was given to ${name}, which SQL Server refuses`,
    );
  }
}
