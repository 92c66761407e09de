import { WebApiError, WebApiErrorCode } from '../../core/web-api/envelope.js';

/**
 * Format negotiation of the Web API (CONTRACT.md section 5): the request in the format of its
 * `Content-Type`; the answer per `Accept` when it names JSON or XML, else in the request's format,
 * else in the tenant's `DefContentType`.
 */

export type WireFormat = 'json' | 'xml';

export interface AnswerFormat {
  readonly kind: WireFormat;
  /** The `Content-Type` of the answer. */
  readonly contentType: string;
}

const MEDIA_TYPES: Readonly<Record<string, WireFormat>> = {
  'application/json': 'json',
  'application/xml': 'xml',
  'text/xml': 'xml',
};

interface MediaRange {
  readonly type: string;
  readonly parameters: ReadonlyMap<string, string>;
}

function parseMediaRange(text: string): MediaRange {
  const [type = '', ...rest] = text.split(';');
  const parameters = new Map<string, string>();
  for (const parameter of rest) {
    const equals = parameter.indexOf('=');
    if (equals < 0) continue;
    const name = parameter.slice(0, equals).trim().toLowerCase();
    parameters.set(
      name,
      parameter
        .slice(equals + 1)
        .trim()
        .replace(/^"(.*)"$/, '$1'),
    );
  }
  return { type: type.trim().toLowerCase(), parameters };
}

const answerFormat = (kind: WireFormat, mediaType: string): AnswerFormat => ({
  kind,
  contentType: `${mediaType}; charset=utf-8`,
});

/** The format a `Content-Type` names, ignoring its parameters; undefined when it names none. */
function namedFormat(contentType: string | undefined): { kind: WireFormat; type: string } | undefined {
  if (!contentType) return undefined;
  const { type } = parseMediaRange(contentType);
  const kind = MEDIA_TYPES[type];
  return kind ? { kind, type } : undefined;
}

/** The request body's format: 400/101 without `Content-Type`, 415/106 for another type or a charset other than UTF-8. */
export function requestFormat(contentType: string | undefined): WireFormat {
  if (!contentType?.trim()) {
    throw new WebApiError(WebApiErrorCode.missingHeader, 'Header Content-Type is missing');
  }
  const range = parseMediaRange(contentType);
  const kind = MEDIA_TYPES[range.type];
  const charset = range.parameters.get('charset')?.toLowerCase();
  if (!kind || (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8')) {
    throw new WebApiError(
      WebApiErrorCode.unsupportedContentType,
      `Content-Type "${contentType.slice(0, 100)}" is not supported: send application/json, application/xml or text/xml in UTF-8`,
    );
  }
  return kind;
}

/** The first JSON or XML type of an `Accept` header, by quality; undefined when it names neither. */
function acceptedFormat(accept: string | undefined): AnswerFormat | undefined {
  if (!accept) return undefined;
  const ranges = accept
    .split(',')
    .map(parseMediaRange)
    .map((range, index) => ({ range, index, q: Number(range.parameters.get('q') ?? '1') }))
    .filter(({ q }) => Number.isFinite(q) && q > 0)
    .sort((a, b) => b.q - a.q || a.index - b.index);
  for (const { range } of ranges) {
    const kind = MEDIA_TYPES[range.type];
    if (kind) return answerFormat(kind, range.type);
  }
  return undefined;
}

/** The answer's format for a request's headers and the tenant's default. */
export function negotiateAnswerFormat(
  headers: Readonly<Record<string, string | undefined>>,
  defaultContentType: string,
): AnswerFormat {
  const accepted = acceptedFormat(headers.accept);
  if (accepted) return accepted;
  const sent = namedFormat(headers['content-type']);
  if (sent) return answerFormat(sent.kind, sent.type);
  const fallback = namedFormat(defaultContentType);
  return fallback ? answerFormat(fallback.kind, fallback.type) : answerFormat('json', 'application/json');
}
