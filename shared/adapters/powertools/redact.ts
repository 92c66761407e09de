/**
 * What never reaches a log line, whatever a caller passes: values under a key that names a secret,
 * and the secret parts of strings (presigned URLs' signatures, Basic credentials, connection
 * string passwords). A second line of defence: callers log no secrets in the first place.
 */
const SECRET_KEY =
  /(authorization|password|passwd|pwd|secret|signature|api[-_]?hash|token|cookie|credential|connection[-_]?string)/i;

const SECRET_IN_TEXT: readonly [RegExp, string][] = [
  // Presigned S3 URLs: the signature and the credentials that go with it.
  [/(X-Amz-(?:Signature|Credential|Security-Token)=)[^&\s"']*/gi, '$1[redacted]'],
  [/\b(Basic|Bearer)\s+[A-Za-z0-9+/=._~-]{6,}/g, '$1 [redacted]'],
  // Connection strings: `Password=…;` and `scheme://user:password@host`.
  [/\b(Password|Pwd)\s*=\s*[^;\s]*/gi, '$1=[redacted]'],
  [/(\/\/[^/:@\s]+:)[^@/\s]+@/g, '$1[redacted]@'],
];

export const REDACTED = '[redacted]';

export function redactText(text: string): string {
  let out = text;
  for (const [pattern, replacement] of SECRET_IN_TEXT) out = out.replace(pattern, replacement);
  return out;
}

/** A `JSON.stringify` replacer applying the rules above. */
export function redactingReplacer(key: string, value: unknown): unknown {
  if (key !== '' && SECRET_KEY.test(key) && value !== undefined && value !== null) return REDACTED;
  return typeof value === 'string' ? redactText(value) : value;
}

/** A copy of `fields` with the rules above applied at every depth. */
export function redactFields(fields: Readonly<Record<string, unknown>>): Record<string, unknown> {
  return JSON.parse(JSON.stringify(fields, redactingReplacer)) as Record<string, unknown>;
}
