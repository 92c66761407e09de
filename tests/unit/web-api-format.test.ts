import { describe, expect, it } from 'vitest';
import type { WebApiError } from '../../shared/core/web-api/envelope.js';
import { negotiateAnswerFormat, requestFormat } from '../../shared/lambda/web-api/format.js';
import { webApiHttpStatus } from '../../shared/lambda/web-api/http.js';

function refusal(check: () => unknown): WebApiError {
  try {
    check();
  } catch (error) {
    return error as WebApiError;
  }
  throw new Error('accepted');
}

describe('Function: requestFormat', () => {
  it.each([
    ['application/json', 'json'],
    ['application/json; charset=utf-8', 'json'],
    ['Application/JSON;charset="UTF-8"', 'json'],
    ['application/xml', 'xml'],
    ['text/xml; charset=utf-8', 'xml'],
  ])('reads %s as %s', (contentType, format) => {
    expect(requestFormat(contentType)).toBe(format);
  });

  it('refuses a missing Content-Type with 400/101', () => {
    for (const missing of [undefined, '', '  ']) {
      const error = refusal(() => requestFormat(missing));
      expect([webApiHttpStatus(error), error.errorCode]).toEqual([400, '101']);
      expect(error.message).toMatch(/Content-Type/);
    }
  });

  it.each([
    'text/plain',
    'application/x-www-form-urlencoded',
    'application/json; charset=windows-1250',
    'json',
  ])('refuses %s with 415/106', (contentType) => {
    const error = refusal(() => requestFormat(contentType));
    expect([webApiHttpStatus(error), error.errorCode]).toEqual([415, '106']);
  });
});

describe('Function: negotiateAnswerFormat', () => {
  const json = { kind: 'json', contentType: 'application/json; charset=utf-8' };
  const xml = { kind: 'xml', contentType: 'application/xml; charset=utf-8' };

  it('answers per Accept when it names JSON or XML', () => {
    expect(
      negotiateAnswerFormat(
        { accept: 'application/xml', 'content-type': 'application/json' },
        'application/json',
      ),
    ).toEqual(xml);
    expect(
      negotiateAnswerFormat({ accept: 'application/json', 'content-type': 'text/xml' }, 'application/xml'),
    ).toEqual(json);
    expect(negotiateAnswerFormat({ accept: 'text/xml' }, 'application/json')).toEqual({
      kind: 'xml',
      contentType: 'text/xml; charset=utf-8',
    });
  });

  it('honours quality values and skips types that are neither', () => {
    expect(
      negotiateAnswerFormat(
        { accept: 'text/html, application/json;q=0.5, application/xml;q=0.9' },
        'application/json',
      ),
    ).toEqual(xml);
    expect(
      negotiateAnswerFormat({ accept: 'application/xml;q=0, application/json' }, 'application/xml'),
    ).toEqual(json);
  });

  it("falls back to the request's format when Accept names neither", () => {
    expect(
      negotiateAnswerFormat({ accept: '*/*', 'content-type': 'application/xml' }, 'application/json'),
    ).toEqual(xml);
    expect(
      negotiateAnswerFormat({ 'content-type': 'application/json; charset=utf-8' }, 'application/xml'),
    ).toEqual(json);
  });

  it('falls back to DefContentType when the request names no format', () => {
    expect(negotiateAnswerFormat({}, 'application/xml')).toEqual(xml);
    expect(
      negotiateAnswerFormat({ accept: '*/*', 'content-type': 'text/plain' }, 'application/json'),
    ).toEqual(json);
  });
});
