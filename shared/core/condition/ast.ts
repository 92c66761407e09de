/**
 * The syntax tree of a checked condition. Every value node carries its inferred {@link Kind}; the
 * parser builds it bottom-up and refuses type errors, so both dialects accept the same language.
 * `pos` is the UTF-16 offset of the node's first token in the input (for error messages).
 */

/**
 * What a value expression is, as far as the translation needs to know. `null` is the bare NULL
 * literal (fits anything); `unknown` comes from columns of kind binary/other and is never coerced.
 */
export type Kind = 'string' | 'number' | 'datetime' | 'date' | 'time' | 'guid' | 'bool' | 'null' | 'unknown';

export type CompareOp = '=' | '<>' | '<' | '<=' | '>' | '>=';
export type ArithmeticOp = '+' | '-' | '*' | '/' | '%';

/** Canonical date part of DATEADD / DATEDIFF. */
export type DatePart =
  | 'year'
  | 'quarter'
  | 'month'
  | 'dayofyear'
  | 'day'
  | 'week'
  | 'weekday'
  | 'hour'
  | 'minute'
  | 'second';

export type SqlTypeName =
  | 'INT'
  | 'BIGINT'
  | 'SMALLINT'
  | 'TINYINT'
  | 'BIT'
  | 'DECIMAL'
  | 'NUMERIC'
  | 'FLOAT'
  | 'REAL'
  | 'MONEY'
  | 'VARCHAR'
  | 'NVARCHAR'
  | 'CHAR'
  | 'NCHAR'
  | 'DATE'
  | 'DATETIME'
  | 'DATETIME2'
  | 'TIME'
  | 'UNIQUEIDENTIFIER';

/** A target type of CAST / CONVERT; `args` are validated integers, `max` is `(MAX)`. */
export interface SqlType {
  readonly name: SqlTypeName;
  readonly args: readonly number[];
  readonly max: boolean;
}

interface Base {
  readonly pos: number;
}

export interface ColumnRef extends Base {
  readonly type: 'column';
  /** Name exactly as in the catalogue. */
  readonly name: string;
  readonly kind: Kind;
  /** The column's numeric type where the checks need it (FLOAT for FLOAT/REAL, the integer types). */
  readonly numericType: NumericType | undefined;
}

/**
 * The T-SQL type of a number value where a check depends on it: the integer types (an overflow
 * when a literal is converted to them) and FLOAT (no modulo). Decimals, money and the rest are
 * left undefined.
 */
export type NumericType = 'TINYINT' | 'SMALLINT' | 'INT' | 'BIGINT' | 'FLOAT';

export interface StringLiteral extends Base {
  readonly type: 'string';
  readonly value: string;
  readonly kind: 'string';
}

export interface NumberLiteral extends Base {
  readonly type: 'number';
  /** The literal as written (digits with at most one `.`), never converted to a float. */
  readonly text: string;
  /** True when it has no `.` and fits a 32-bit int (T-SQL types it `int`); otherwise it is a decimal. */
  readonly isInt: boolean;
  /** Precision and scale T-SQL gives the literal when it is a decimal. */
  readonly precision: number;
  readonly scale: number;
  readonly kind: 'number';
}

export interface NullLiteral extends Base {
  readonly type: 'null';
  readonly kind: 'null';
}

export interface Unary extends Base {
  readonly type: 'unary';
  readonly op: '-';
  readonly operand: Expr;
  readonly kind: Kind;
}

export interface Binary extends Base {
  readonly type: 'binary';
  readonly op: ArithmeticOp;
  readonly left: Expr;
  readonly right: Expr;
  readonly kind: Kind;
}

/** Functions with ordinary value arguments. */
export type PlainFunction =
  | 'ISNULL'
  | 'COALESCE'
  | 'UPPER'
  | 'LOWER'
  | 'LTRIM'
  | 'RTRIM'
  | 'TRIM'
  | 'LEN'
  | 'SUBSTRING'
  | 'LEFT'
  | 'RIGHT'
  | 'YEAR'
  | 'MONTH'
  | 'DAY'
  | 'GETDATE'
  | 'ABS'
  | 'ROUND';

export interface Call extends Base {
  readonly type: 'call';
  readonly name: PlainFunction;
  readonly args: readonly Expr[];
  readonly kind: Kind;
}

export interface DateAdd extends Base {
  readonly type: 'dateadd';
  readonly part: DatePart;
  readonly amount: Expr;
  readonly date: Expr;
  readonly kind: Kind;
}

export interface DateDiff extends Base {
  readonly type: 'datediff';
  readonly part: DatePart;
  readonly start: Expr;
  readonly end: Expr;
  readonly kind: 'number';
}

export interface Cast extends Base {
  readonly type: 'cast';
  /** Which spelling was used; CONVERT may carry a style. */
  readonly syntax: 'CAST' | 'CONVERT';
  readonly target: SqlType;
  readonly operand: Expr;
  readonly style: number | undefined;
  readonly kind: Kind;
}

export type Expr =
  | ColumnRef
  | StringLiteral
  | NumberLiteral
  | NullLiteral
  | Unary
  | Binary
  | Call
  | DateAdd
  | DateDiff
  | Cast;

export interface Compare extends Base {
  readonly type: 'compare';
  readonly op: CompareOp;
  readonly left: Expr;
  readonly right: Expr;
}

export interface Like extends Base {
  readonly type: 'like';
  readonly negated: boolean;
  readonly operand: Expr;
  readonly pattern: Expr;
  /** The single ESCAPE character, when given (always a literal). */
  readonly escape: StringLiteral | undefined;
}

export interface In extends Base {
  readonly type: 'in';
  readonly negated: boolean;
  readonly operand: Expr;
  readonly items: readonly Expr[];
}

export interface Between extends Base {
  readonly type: 'between';
  readonly negated: boolean;
  readonly operand: Expr;
  readonly low: Expr;
  readonly high: Expr;
}

export interface IsNull extends Base {
  readonly type: 'isnull';
  readonly negated: boolean;
  readonly operand: Expr;
}

export interface Logical extends Base {
  readonly type: 'and' | 'or';
  /** Two or more operands (chains are flattened). */
  readonly items: readonly Condition[];
}

export interface Not extends Base {
  readonly type: 'not';
  readonly operand: Condition;
}

export type Condition = Compare | Like | In | Between | IsNull | Logical | Not;

export type Node = Expr | Condition;

const CONDITION_TYPES: ReadonlySet<Node['type']> = new Set([
  'compare',
  'like',
  'in',
  'between',
  'isnull',
  'and',
  'or',
  'not',
]);

export function isCondition(node: Node): node is Condition {
  return CONDITION_TYPES.has(node.type);
}
