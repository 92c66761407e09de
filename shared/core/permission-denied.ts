import { DatabasePermissionError } from './database.js';
import type { Log } from './log.js';
import { MetricName, type ServiceMetrics } from './metrics.js';

/** A permission the service's database login lacks, wherever it sits among an error's causes. */
export function permissionDeniedIn(error: unknown): DatabasePermissionError | undefined {
  for (let link = error, depth = 0; link instanceof Error && depth < 8; link = link.cause, depth++) {
    if (link instanceof DatabasePermissionError) return link;
  }
  return undefined;
}

/**
 * When `error` is (or wraps) a missing database permission: one log line naming the object and
 * what to grant, and the metric DatabasePermissionDenied (the service's sum, and by `fields.tenant`),
 * which the alarm of the same name watches (CONTRACT.md section 7). Answers the permission error,
 * or undefined when it was none.
 */
export function reportPermissionDenied(
  error: unknown,
  fields: Readonly<Record<string, unknown>>,
  log: Log,
  metrics: ServiceMetrics,
): DatabasePermissionError | undefined {
  const denied = permissionDeniedIn(error);
  if (!denied) return undefined;
  log.error('database permission denied', { ...fields, object: denied.object, grant: denied.grant });
  const tenant = typeof fields.tenant === 'string' ? fields.tenant : undefined;
  metrics.count({ [MetricName.databasePermissionDenied]: 1 }, tenant ? [{}, { tenant }] : [{}]);
  return denied;
}
