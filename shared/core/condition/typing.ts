/**
 * Kind inference rules. They follow T-SQL implicit conversion (data type precedence) where it is
 * well defined and refuse the murky corners (date arithmetic with `+`, numbers as dates, ...),
 * so that the PostgreSQL translation can reproduce every accepted expression.
 */
import type { ColumnInfo, ColumnKind } from '../database.js';
import type { ArithmeticOp, Expr, Kind, NumericType } from './ast.js';

export function kindOfColumn(kind: ColumnKind): Kind {
  switch (kind) {
    case 'int':
    case 'decimal':
    case 'float':
      return 'number';
    case 'string':
      return 'string';
    case 'guid':
      return 'guid';
    case 'datetime':
      return 'datetime';
    case 'date':
      return 'date';
    case 'time':
      return 'time';
    case 'bool':
      return 'bool';
    default:
      return 'unknown';
  }
}

/** T-SQL data type precedence, highest wins an implicit conversion. */
const RANK: Readonly<Record<Kind, number>> = {
  datetime: 8,
  date: 7,
  time: 6,
  number: 5,
  bool: 4,
  guid: 3,
  string: 2,
  null: 0,
  unknown: 0,
};

/** How a kind is named in messages. */
export function describeKind(kind: Kind): string {
  switch (kind) {
    case 'string':
      return 'text';
    case 'guid':
      return 'uniqueidentifier';
    case 'bool':
      return 'bit';
    case 'null':
      return 'NULL';
    case 'unknown':
      return 'a value of unsupported type';
    default:
      return kind;
  }
}

/** Whether a value of `from` converts implicitly to `to` (the higher-ranked kind). */
function convertible(from: Kind, to: Kind): boolean {
  if (from === to || from === 'null' || to === 'null') return true;
  // Values of unsupported types (binary, ...) only meet NULL, each other and text.
  if (from === 'unknown' || to === 'unknown') return from === 'string' || to === 'string';
  if (from === 'string' || to === 'string') return true;
  if ((from === 'bool' && to === 'number') || (from === 'number' && to === 'bool')) return true;
  if ((from === 'date' && to === 'datetime') || (from === 'datetime' && to === 'date')) return true;
  return false;
}

/**
 * The kind operands of a comparison / IN / BETWEEN / COALESCE are converted to: the highest
 * ranked concrete kind, `unknown` when an operand is unknown and none is concrete, `null` when
 * all are NULL. Calls `fail` when two operands cannot be compared.
 */
export function commonKind(kinds: readonly Kind[], fail: (message: string) => never): Kind {
  let best: Kind = kinds.includes('unknown') ? 'unknown' : 'null';
  for (const kind of kinds) if (RANK[kind] > RANK[best]) best = kind;
  for (const kind of kinds) {
    if (!convertible(kind, best)) fail(`Cannot compare ${describeKind(kind)} with ${describeKind(best)}`);
  }
  return best;
}

/** Kind of `left op right`; `+` on two texts is concatenation. */
export function arithmeticKind(
  op: ArithmeticOp,
  left: Kind,
  right: Kind,
  fail: (message: string) => never,
): Kind {
  for (const kind of [left, right]) {
    if (kind === 'datetime' || kind === 'date' || kind === 'time') {
      fail(`Operator ${op} cannot be used with ${kind} values (use DATEADD or DATEDIFF)`);
    }
    if (kind === 'guid') fail(`Operator ${op} cannot be used with uniqueidentifier values`);
  }
  if (left === 'unknown' || right === 'unknown') {
    fail(`Operator ${op} cannot be used with ${describeKind('unknown')}`);
  }
  const texts = (left === 'string' || left === 'null') && (right === 'string' || right === 'null');
  if (op === '+') {
    if (texts && (left === 'string' || right === 'string')) return 'string';
    return 'number';
  }
  if (left === 'string' && right === 'string') {
    fail(`Operator ${op} cannot be used with two text values`);
  }
  return 'number';
}

/** Checks that `kind` is one of `allowed` (NULL always passes). */
export function expectKind(
  kind: Kind,
  allowed: readonly Kind[],
  what: string,
  fail: (message: string) => never,
): void {
  if (kind === 'null' || allowed.includes(kind)) return;
  fail(`${what} cannot be ${describeKind(kind)}`);
}

/** The numeric type of a column, from its catalogue type (SQL Server's or PostgreSQL's spelling). */
export function numericTypeOfColumn(column: ColumnInfo): NumericType | undefined {
  if (column.kind === 'float') return 'FLOAT';
  if (column.kind !== 'int') return undefined;
  switch (column.dataType.toLowerCase()) {
    case 'tinyint':
      return 'TINYINT';
    case 'smallint':
      return 'SMALLINT';
    case 'int':
    case 'integer':
      return 'INT';
    case 'bigint':
      return 'BIGINT';
    default:
      return undefined;
  }
}

/** T-SQL data type precedence among the numeric types tracked; a decimal (undefined) sits between BIGINT and FLOAT. */
const NUMERIC_RANK: Readonly<Record<NumericType, number>> = {
  TINYINT: 1,
  SMALLINT: 2,
  INT: 3,
  BIGINT: 4,
  FLOAT: 6,
};
const DECIMAL_RANK = 5;

/** The type T-SQL gives an expression of several number operands (texts, bits and NULL take the others' type). */
function combinedNumericType(operands: readonly Expr[]): NumericType | undefined {
  let best: NumericType | undefined;
  let bestRank = 0;
  for (const operand of operands) {
    if (operand.kind !== 'number') continue;
    const type = numericTypeOf(operand);
    const rank = type === undefined ? DECIMAL_RANK : NUMERIC_RANK[type];
    if (rank > bestRank) {
      best = type;
      bestRank = rank;
    }
  }
  return best;
}

/**
 * The T-SQL numeric type of a value where the condition's checks depend on it (an integer type or
 * FLOAT), undefined for decimals, money and values that are not numbers.
 */
export function numericTypeOf(node: Expr): NumericType | undefined {
  switch (node.type) {
    case 'column':
      return node.numericType;
    case 'number':
      return node.isInt ? 'INT' : undefined;
    case 'unary':
      return node.kind === 'number' ? numericTypeOf(node.operand) : undefined;
    case 'binary':
      return node.kind === 'number' ? combinedNumericType([node.left, node.right]) : undefined;
    case 'datediff':
      return 'INT';
    case 'dateadd':
      return undefined;
    case 'cast':
      if (node.target.name === 'REAL') return 'FLOAT';
      return node.target.name in NUMERIC_RANK ? (node.target.name as NumericType) : undefined;
    case 'call':
      switch (node.name) {
        case 'ABS':
        case 'ROUND':
          return node.args[0]!.kind === 'number' ? numericTypeOf(node.args[0]!) : undefined;
        case 'ISNULL': {
          const [first, second] = node.args as [Expr, Expr];
          return first.kind === 'null' ? combinedNumericType([second]) : combinedNumericType([first]);
        }
        case 'COALESCE':
          return combinedNumericType(node.args);
        case 'LEN':
        case 'YEAR':
        case 'MONTH':
        case 'DAY':
          return 'INT';
        default:
          return undefined;
      }
    default:
      return undefined;
  }
}
