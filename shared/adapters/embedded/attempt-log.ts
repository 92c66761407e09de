/** The attempt logs' INSERT in PostgreSQL (sql-common/attempt-log.ts): one writer for both tables. */
import { ATTEMPT_COLUMNS, attemptedAtParameter } from '../sql-common/attempt-log.js';

/** INSERT of one attempt into `table`: its `own` columns' parameters first, then an attempt's. */
export function embeddedAttemptInsert(table: string, own: readonly string[]): string {
  const columns = [...own, ...ATTEMPT_COLUMNS];
  const attemptedAt = attemptedAtParameter(own.length);
  const values = columns.map((_, i) => (i + 1 === attemptedAt ? `$${i + 1}::timestamp(3)` : `$${i + 1}`));
  return `INSERT INTO "dbo"."${table}" (${columns.map((c) => `"${c}"`).join(', ')})
    VALUES (${values.join(', ')})`;
}
