import { createHmac } from 'node:crypto';

/**
 * A continuation cursor over `values` with a valid MAC, built by hand as someone holding the
 * signing key could build it (the layout of shared/core/data-api/cursor.ts, written out again on
 * purpose, so that a test sees a change of it): for cursors whose values the service must refuse
 * even though they verify.
 */
export function mintCursor(
  key: Uint8Array,
  at: {
    readonly tenant: string;
    readonly schema: string;
    readonly source: string;
    readonly primaryKey: readonly string[];
  },
  values: readonly unknown[],
): string {
  const payload = Buffer.from(JSON.stringify(values)).toString('base64url');
  const tag = createHmac('sha256', key)
    .update(
      JSON.stringify([
        'paging-cursor',
        at.tenant,
        at.schema.toLowerCase(),
        at.source.toLowerCase(),
        at.primaryKey,
      ]),
    )
    .update('\n')
    .update(payload)
    .digest()
    .subarray(0, 16)
    .toString('base64url');
  return `${payload}.${tag}`;
}
