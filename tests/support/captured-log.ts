import { beforeEach } from 'vitest';
import type { Log, LogFields } from '../../shared/core/log.js';
import { serviceLog, useObservability } from '../../shared/lambda/observability.js';

/**
 * A vitest setup file: the service's log lines are kept, not printed, and printed (through the real
 * logger, so redacted and at its level) only for a test that fails. Tests provoke database outages,
 * bad registries and failing webhooks on purpose; their expected WARN and ERROR lines would bury
 * what a failure has to say. Tests that read the log put their own in place (useObservability) as
 * before; lines logged between tests (hooks) are dropped with the next test's start.
 */
type Level = keyof Log;
const KEPT = 1000;
const entries: [Level, string, LogFields | undefined][] = [];
const printing = serviceLog();

const keep =
  (level: Level) =>
  (message: string, fields?: LogFields): void => {
    entries.push([level, message, fields]);
    if (entries.length > KEPT) entries.shift();
  };
useObservability({
  log: { debug: keep('debug'), info: keep('info'), warn: keep('warn'), error: keep('error') },
});

beforeEach(({ onTestFailed }) => {
  entries.length = 0;
  onTestFailed(() => {
    if (entries.length === 0) return;
    process.stderr.write(
      `\n--- the service's log during this failed test (${entries.length} entries; those at LOG_LEVEL or above follow) ---\n`,
    );
    for (const [level, message, fields] of entries.splice(0)) printing[level](message, fields);
  });
});
