/** Date-times as both SQL adapters pass and read them. */

/** Wall-clock UTC `YYYY-MM-DD hh:mm:ss.mmm`, which both SQL Server and PostgreSQL read as a date-time. */
export function sqlTimestamp(ms: number): string {
  return new Date(ms).toISOString().slice(0, 23).replace('T', ' ');
}

/** A date-time column as ms since the epoch: a Date (SQL Server driver, UTC) or wall-clock UTC text (embedded). */
export function sqlTimeMs(value: unknown): number | null {
  if (value === null || value === undefined) return null;
  if (value instanceof Date) return value.getTime();
  const text = String(value).replace(' ', 'T');
  const ms = Date.parse(/Z|[+-]\d\d:?\d\d$/.test(text) ? text : `${text}Z`);
  return Number.isNaN(ms) ? null : ms;
}
