import { afterEach, describe, expect, it, vi } from 'vitest';
import { createPowertoolsLog } from '../../shared/adapters/powertools/log.js';
import { createEmfMetrics, writeToStdout } from '../../shared/adapters/powertools/metrics.js';
import { redactFields, redactText } from '../../shared/adapters/powertools/redact.js';
import { describeError } from '../../shared/core/log.js';
import { renderDataApiError } from '../../shared/lambda/data-api.js';
import { httpHandler } from '../../shared/lambda/http.js';
import { defaultEmfSink, logFormatFromEnv, useObservability } from '../../shared/lambda/observability.js';
import { webApiJobWorker } from '../../shared/lambda/web-api/job-worker.js';

/** What the logger writes to stdout and stderr while `act` runs. */
function captureOutput(act: () => void): string[] {
  const lines: string[] = [];
  const capture = (chunk: unknown) => {
    lines.push(...String(chunk).split('\n').filter(Boolean));
    return true;
  };
  const out = vi.spyOn(process.stdout, 'write').mockImplementation(capture as never);
  const err = vi.spyOn(process.stderr, 'write').mockImplementation(capture as never);
  try {
    act();
  } finally {
    out.mockRestore();
    err.mockRestore();
  }
  return lines;
}

afterEach(() => {
  vi.unstubAllEnvs();
});

describe('Function: redactFields', () => {
  it('hides values under secret-looking keys at any depth', () => {
    expect(
      redactFields({
        authorization: 'Basic ZGVtbzpkZW1vLXBhc3N3b3Jk',
        headers: { 'x-svc-signature': 't=1,v1=abc', 'x-api-key': 'demo-api-key', cookie: 'a=b' },
        SECRET_WEBHOOK: 'demo-webhook-secret',
        apiHash: 'demo-api-hash',
        password: 'p',
        connectionString: 'Server=x;Password=y',
        tenant: 'demo',
      }),
    ).toEqual({
      authorization: '[redacted]',
      headers: { 'x-svc-signature': '[redacted]', 'x-api-key': 'demo-api-key', cookie: '[redacted]' },
      SECRET_WEBHOOK: '[redacted]',
      apiHash: '[redacted]',
      password: '[redacted]',
      connectionString: '[redacted]',
      tenant: 'demo',
    });
  });

  it('hides the secret parts of strings: presigned URLs, Basic credentials, connection strings', () => {
    expect(
      redactText(
        'https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4&X-Amz-Credential=AKIA%2F1&X-Amz-Signature=ab12&x-id=GetObject',
      ),
    ).toBe(
      'https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4&X-Amz-Credential=[redacted]&X-Amz-Signature=[redacted]&x-id=GetObject',
    );
    expect(redactText('header Basic ZGVtbzpkZW1vLXBhc3N3b3Jk here')).toBe('header Basic [redacted] here');
    expect(redactText('Server=db;User Id=sa;Password=Secret1;Encrypt=true')).toBe(
      'Server=db;User Id=sa;Password=[redacted];Encrypt=true',
    );
    expect(redactText('mssql://sa:Secret1@db:1433/erp')).toBe('mssql://sa:[redacted]@db:1433/erp');
  });
});

describe('Function: createPowertoolsLog', () => {
  it('writes JSON lines at the level of LOG_LEVEL, redacted', () => {
    vi.stubEnv('POWERTOOLS_LOG_LEVEL', '');
    vi.stubEnv('LOG_LEVEL', 'WARN');
    const log = createPowertoolsLog('json');
    const lines = captureOutput(() => {
      log.info('not shown');
      log.warn('shown', { authorization: 'Basic ZGVtbzpkZW1vLXBhc3N3b3Jk', journalId: 3 });
    });
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({
      level: 'WARN',
      message: 'shown',
      service: 'erp-integration-gateway',
      authorization: '[redacted]',
      journalId: 3,
    });
  });

  it('writes short human lines in text format: the access line, and handler summaries only at DEBUG', () => {
    vi.stubEnv('POWERTOOLS_LOG_LEVEL', '');
    vi.stubEnv('LOG_LEVEL', 'INFO');
    const log = createPowertoolsLog('text');
    const lines = captureOutput(() => {
      log.info('access', { method: 'GET', path: '/health', status: 200, durationMs: 3 });
      log.info('access', {
        method: 'GET',
        path: '/demo/JsonAPI/Data/getRowsCount/NOPE',
        status: 404,
        durationMs: 5,
        requestId: 'c0ffee00-0000-4000-8000-000000000001',
        errorCode: 'data_source_not_found',
      });
      log.info('request', { method: 'GET', path: '/health', status: 200 });
      log.warn('job attempt failed', { journalId: 7, note: 'Basic ZGVtbzpkZW1vLXBhc3N3b3Jk' });
    });
    expect(lines).toEqual([
      'GET /health 200 3 ms',
      'GET /demo/JsonAPI/Data/getRowsCount/NOPE 404 5 ms requestId=c0ffee00-0000-4000-8000-000000000001 errorCode=data_source_not_found',
      'WARN job attempt failed journalId=7 note=Basic [redacted]',
    ]);
  });
});

describe('Function: createEmfMetrics', () => {
  it('writes one EMF document per observation with its dimension sets', () => {
    const documents: string[] = [];
    const metrics = createEmfMetrics({
      namespace: 'Test',
      serviceName: 'svc',
      sink: (d) => documents.push(d),
    });
    metrics.count({ Requests: 1, ServerErrors: 1 }, [
      { function: 'f' },
      { route: 'GET /x', statusClass: '5xx' },
    ]);
    metrics.count({ WebhookAttempts: 1 }, [{}, { outcome: 'retrying' }]);
    const [request, webhook] = documents.map((d) => JSON.parse(d));
    expect(request).toMatchObject({
      _aws: {
        CloudWatchMetrics: [
          {
            Namespace: 'Test',
            Dimensions: [
              ['service', 'function'],
              ['service', 'route', 'statusClass'],
            ],
            Metrics: [
              { Name: 'Requests', Unit: 'Count' },
              { Name: 'ServerErrors', Unit: 'Count' },
            ],
          },
        ],
      },
      service: 'svc',
      function: 'f',
      route: 'GET /x',
      statusClass: '5xx',
      Requests: 1,
      ServerErrors: 1,
    });
    // The webhook failure alarm reads the set with the service alone.
    expect(webhook._aws.CloudWatchMetrics[0].Dimensions).toEqual([['service'], ['service', 'outcome']]);
    // Nothing of one observation carries over into the next (one Powertools instance serves all).
    expect(webhook._aws.CloudWatchMetrics[0].Metrics).toEqual([{ Name: 'WebhookAttempts', Unit: 'Count' }]);
    expect(Object.keys(webhook).sort()).toEqual(['WebhookAttempts', '_aws', 'outcome', 'service']);
    metrics.count({ Requests: 1 }, [{ function: 'g' }]);
    const third = JSON.parse(documents[2]!);
    expect(third._aws.CloudWatchMetrics[0].Dimensions).toEqual([['service', 'function']]);
    expect(Object.keys(third).sort()).toEqual(['Requests', '_aws', 'function', 'service']);
  });
});

describe('Function: defaultEmfSink', () => {
  it('writes EMF to stdout in Lambda, and elsewhere to the log at DEBUG', () => {
    vi.stubEnv('AWS_LAMBDA_FUNCTION_NAME', 'erp-integration-gateway-dev-webTest');
    expect(defaultEmfSink()).toBe(writeToStdout);
    vi.stubEnv('AWS_LAMBDA_FUNCTION_NAME', '');
    const debug: unknown[] = [];
    const none = () => undefined;
    useObservability({
      log: { debug: (_message, fields) => debug.push(fields), info: none, warn: none, error: none },
    });
    defaultEmfSink()('{"_aws":{},"Requests":1}');
    expect(debug).toEqual([{ emf: { _aws: {}, Requests: 1 } }]);
  });
});

describe('Function: logFormatFromEnv', () => {
  it('reads json or text, and names LOG_FORMAT when it is neither', () => {
    vi.stubEnv('LOG_FORMAT', '');
    expect(logFormatFromEnv()).toBe('json');
    vi.stubEnv('LOG_FORMAT', 'TEXT');
    expect(logFormatFromEnv()).toBe('text');
    vi.stubEnv('LOG_FORMAT', 'pretty');
    expect(() => logFormatFromEnv()).toThrow(/LOG_FORMAT/);
    // At the cold start of a function, not at its first request.
    expect(() => httpHandler(async () => ({ status: 200 }), renderDataApiError)).toThrow(/LOG_FORMAT/);
    expect(() => webApiJobWorker()).toThrow(/LOG_FORMAT/);
  });
});

describe('Function: describeError', () => {
  it('keeps the name, message and causes', () => {
    const error = new Error('query failed', { cause: new TypeError('socket closed') });
    expect(describeError(error)).toEqual({
      error: 'Error',
      errorMessage: 'query failed',
      cause: { error: 'TypeError', errorMessage: 'socket closed' },
    });
  });
});
