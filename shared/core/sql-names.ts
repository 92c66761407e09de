/** One SQL identifier as the service accepts it: ASCII letters, digits and `_`, at most 128 characters. */
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

export interface QualifiedName {
  /** Undefined when the name was not qualified. */
  readonly schema: string | undefined;
  readonly name: string;
}

/** Splits `NAME` or `schema.NAME`; undefined when either part is not an identifier. */
export function parseQualifiedName(text: string): QualifiedName | undefined {
  const parts = text.split('.');
  if (parts.length > 2 || !parts.every((part) => IDENTIFIER.test(part))) return undefined;
  return parts.length === 2 ? { schema: parts[0], name: parts[1]! } : { schema: undefined, name: parts[0]! };
}
