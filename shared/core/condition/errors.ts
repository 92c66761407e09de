/**
 * The one error the condition language throws. Its message is written for the HTTP client (it is
 * answered as a 400) and always names the problem and where it is.
 */
export class ConditionError extends Error {
  override readonly name = 'ConditionError';
  constructor(
    message: string,
    /** 1-based character (code point) position in the condition. */
    readonly position: number,
  ) {
    super(message);
  }
}

/** 1-based code point position of the UTF-16 `offset` in `source`. */
export function positionOf(source: string, offset: number): number {
  let position = 1;
  for (let i = 0; i < offset && i < source.length; i++) {
    const code = source.charCodeAt(i);
    // A high surrogate followed by a low one is a single character.
    if (code >= 0xd800 && code <= 0xdbff && i + 1 < offset) {
      const next = source.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
    }
    position++;
  }
  return position;
}

/**
 * Builds a ConditionError for the UTF-16 `offset` in `source`. `format` receives the 1-based
 * position and returns the whole message; the default appends ` at position N`.
 */
export function conditionError(
  source: string,
  offset: number,
  problem: string,
  format: (problem: string, position: number) => string = (p, n) => `${p} at position ${n}`,
): ConditionError {
  const position = positionOf(source, offset);
  return new ConditionError(format(problem, position), position);
}
