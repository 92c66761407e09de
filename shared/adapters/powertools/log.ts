import { Logger, type LogItem, LogLevelThreshold } from '@aws-lambda-powertools/logger';
import type { Log, LogFields } from '../../core/log.js';
import { redactFields, redactingReplacer } from './redact.js';

export type LogFormat = 'json' | 'text';

/**
 * A development server's lines: `GET /path 200 12 ms key=value …` for each `access` entry (the
 * local HTTP server's, with the request id and error code of the function's answer), `WARN message
 * key=value …` for anything else. The handlers' own `request` summaries repeat what the access
 * line says, so they show only at DEBUG. Same levels and redaction as JSON.
 */
class TextLogger extends Logger {
  protected override printLog(logLevel: number, log: LogItem): void {
    log.prepareForPrint();
    const attributes = redactFields(log.getAttributes());
    const { level, message, timestamp: _t, service: _s, sampling_rate: _r, ...fields } = attributes;
    if (message === 'request' && this.getLevelName() !== 'DEBUG' && this.getLevelName() !== 'TRACE') return;
    let line: string;
    if (message === 'access') {
      const { method, path, status, durationMs, ...rest } = fields;
      line = `${method} ${path} ${status} ${durationMs} ms${formatFields(rest)}`;
    } else {
      line = `${String(level)} ${String(message)}${formatFields(fields)}`;
    }
    const stream = logLevel >= LogLevelThreshold.WARN ? process.stderr : process.stdout;
    stream.write(`${line}\n`);
  }
}

function formatFields(fields: Record<string, unknown>): string {
  const parts = Object.entries(fields)
    .filter(([, value]) => value !== undefined)
    .map(([key, value]) => `${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`);
  return parts.length ? ` ${parts.join(' ')}` : '';
}

/**
 * The service's log on Powertools Logger: JSON lines on stdout for CloudWatch (`json`), or short
 * human lines for the local stack (`text`). Level from `POWERTOOLS_LOG_LEVEL` / `LOG_LEVEL`
 * (or Lambda's own log level setting), INFO by default.
 */
export function createPowertoolsLog(format: LogFormat = 'json'): Log {
  const options = {
    serviceName: process.env.POWERTOOLS_SERVICE_NAME ?? 'erp-integration-gateway',
    jsonReplacerFn: redactingReplacer as (key: string, value: unknown) => unknown,
  };
  const logger = format === 'text' ? new TextLogger(options) : new Logger(options);
  const fieldsOf = (fields: LogFields | undefined) => (fields ? { ...fields } : {});
  return {
    debug: (message, fields) => logger.debug(message, fieldsOf(fields)),
    info: (message, fields) => logger.info(message, fieldsOf(fields)),
    warn: (message, fields) => logger.warn(message, fieldsOf(fields)),
    error: (message, fields) => logger.error(message, fieldsOf(fields)),
  };
}
