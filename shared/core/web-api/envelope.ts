import { isUtf8 } from 'node:buffer';

/** `vltyp` that fetches the result of an earlier call (SERVICE-SPEC 4.2 rule 2). */
export const RESULT_FOR_ID = 997;

/** `errorCode` values of CONTRACT.md section 5, plus the project's own (documented in docs/errors.md). */
export const WebApiErrorCode = {
  invalidEnvelope: '100',
  missingHeader: '101',
  unknownApiKey: '102',
  badSignature: '103',
  expiredSignature: '104',
  replayedRequest: '105',
  unsupportedContentType: '106',
  /** `Idempotency-Key` reused with another request (HTTP 422, CONTRACT 5a). */
  idempotencyKeyReused: '107',
  /** `Idempotency-Key` of a call still running (HTTP 409 with Retry-After, CONTRACT 5a). */
  idempotencyKeyInProgress: '108',
  unknownVltyp: '110',
  unknownJournal: '111',
  /** Project's own: the tenant in the path does not exist. */
  unknownTenant: '112',
  operationFailed: '120',
  /** Project's own: the request is over its tenant's fair share (HTTP 429, CONTRACT.md section 2). */
  tenantRateLimited: '130',
  databaseUnavailable: '150',
  timeLimit: '160',
  /** A synchronous operation outlasted the synchronous time limit and was cancelled. */
  syncTimeLimit: '161',
  /**
   * Project's own: the call outran its invocation, at the gateway's 30 s (HTTP API has answered the
   * client 503 itself by then); what the log and the access line say of it, never "unexpected".
   */
  gatewayTimeLimit: '162',
  /** Project's own: an asynchronous job failed permanently outside the database (retries used up, worker stopped). */
  jobAbandoned: '170',
  /**
   * Project's own: the service's database login lacks a permission (HTTP 500, CONTRACT.md section
   * 7); the message names the object and what to grant.
   */
  databasePermissionDenied: '180',
  /** Project's own: anything unexpected (HTTP 500). */
  internal: '190',
} as const;

export type WebApiErrorCode = (typeof WebApiErrorCode)[keyof typeof WebApiErrorCode];

/**
 * A refusal of the Web API: its `errorCode` and a message that says what is wrong. The HTTP status
 * follows from the code (CONTRACT.md section 5) and is set in one place, shared/lambda/web-api.
 * Kept apart from the Data API's `ServiceError`, whose codes are words.
 */
export class WebApiError extends Error {
  override readonly name = 'WebApiError';
  /** The journal row of a call that was journaled before it failed; the error body's `id`. */
  readonly journalId: number | null;
  /** When trying again later is the remedy: after how many seconds (the answer's `Retry-After`). */
  readonly retryAfterSeconds: number | undefined;
  /** Further headers of the answer (a refusal's RateLimit fields). */
  readonly headers: Readonly<Record<string, string>> | undefined;
  constructor(
    readonly errorCode: WebApiErrorCode,
    message: string,
    options?: ErrorOptions & {
      journalId?: number | null;
      retryAfterSeconds?: number;
      headers?: Readonly<Record<string, string>>;
    },
  ) {
    super(message, options);
    this.journalId = options?.journalId ?? null;
    this.retryAfterSeconds = options?.retryAfterSeconds;
    this.headers = options?.headers;
  }
}

export type ParamValue = string | number | boolean | null;
export type ParamObject = Readonly<Record<string, ParamValue>>;

/** The request envelope (SERVICE-SPEC 2.3) in its canonical JSON form. */
export interface WebApiRequest {
  readonly vltyp: number;
  readonly params: readonly ParamObject[];
}

/** The response envelope (SERVICE-SPEC 2.4) exactly as the JSON answer carries it. */
export interface WebApiAnswer {
  readonly id: number | null;
  readonly vlResult: number;
  readonly data: readonly unknown[];
}

/**
 * An answer and the name of its result rows (`WS_OPERATION.ROW_NAME`), which only the XML form
 * needs. An answer holds at most one set of rows, at the top or inside `resultForId`.
 */
export interface CallResult {
  readonly answer: WebApiAnswer;
  readonly rowName: string | undefined;
}

/** `{"id":…,"vlResult":-1,"data":[{"error":[{"errorCode":"…","errorMessage":"…"}]}]}` */
export function errorAnswer(
  id: number | null,
  errorCode: WebApiErrorCode,
  errorMessage: string,
  vlResult = -1,
) {
  return { id, vlResult, data: [{ error: [{ errorCode, errorMessage }] }] } satisfies WebApiAnswer;
}

/** 400/100: the body is not a valid envelope, `message` saying what is wrong. */
export const invalidEnvelope = (message: string) => new WebApiError(WebApiErrorCode.invalidEnvelope, message);

/** The text of a request body in either format: UTF-8, a byte order mark dropped; 400/100 otherwise. */
export function bodyText(body: Uint8Array): string {
  if (!isUtf8(body)) throw invalidEnvelope('The body is not valid UTF-8');
  return Buffer.from(body.buffer, body.byteOffset, body.byteLength)
    .toString('utf8')
    .replace(/^\uFEFF/, '');
}

/**
 * How `vltyp` is written, in JSON (the number's own text) and in XML (the element's text, spaces
 * around it aside) alike: an integer without a fraction, exponent, sign `+` or leading zero, so
 * that the two formats accept the same numbers (`1001.0`, `1e3` and `01001` are refused in both).
 */
const INTEGER_NUMERAL = /^-?(?:0|[1-9][0-9]{0,14})$/;

/** The `vltyp` a numeral as written stands for; 400/100 when it is not an integer numeral. */
export function vltypOfNumeral(numeral: string): number {
  if (!INTEGER_NUMERAL.test(numeral)) {
    throw invalidEnvelope(
      `vltyp must be an integer written without fraction, exponent or leading zero, got ${JSON.stringify(numeral.slice(0, 40))}`,
    );
  }
  return Number(numeral);
}

function checkedParamValue(value: unknown, where: string): ParamValue {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') {
    // JSON.parse reads 1e400 as Infinity, which JSON.stringify would pass on as null: a filter dropped.
    if (!Number.isFinite(value))
      throw invalidEnvelope(`${where} is a number outside the range of a finite number`);
    return value;
  }
  throw invalidEnvelope(`${where} must be a string, number, boolean or null`);
}

/**
 * Checks a decoded body against the envelope (CONTRACT.md section 5): `vltyp` an integer, `params`
 * absent or an array of flat objects whose values are strings, finite numbers, booleans or null.
 * Throws 400/100 naming the problem.
 */
export function validateEnvelope(candidate: {
  readonly vltyp?: unknown;
  readonly params?: unknown;
}): WebApiRequest {
  const { vltyp, params } = candidate;
  if (vltyp === undefined || vltyp === null) throw invalidEnvelope('vltyp is missing');
  if (typeof vltyp !== 'number' || !Number.isSafeInteger(vltyp)) {
    throw invalidEnvelope(`vltyp must be an integer, got ${JSON.stringify(vltyp)?.slice(0, 40)}`);
  }
  if (params === undefined) return { vltyp, params: [] };
  if (!Array.isArray(params)) throw invalidEnvelope('params must be an array of objects');
  const checked = params.map((entry, index): ParamObject => {
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) {
      throw invalidEnvelope(`params[${index}] must be an object`);
    }
    for (const [name, value] of Object.entries(entry)) {
      checkedParamValue(value, `params[${index}].${name.slice(0, 64)}`);
    }
    return entry as ParamObject;
  });
  return { vltyp, params: checked };
}

const JOURNAL_ID = /^[1-9][0-9]{0,15}$/;

/**
 * The journal id a 997 asks for: `params` is exactly `[{"idws_journal": J}]`, J a positive integer
 * (a JSON number, or the digits as text, which is all XML can send) with nothing else beside it.
 * 400/100 otherwise.
 */
export function journalIdOfResultRequest(params: readonly ParamObject[]): number {
  const usage =
    'vltyp 997 needs params [{"idws_journal": <journal id>}] (XML: <params><idwsJournal>…</idwsJournal></params>)';
  if (params.length !== 1) throw invalidEnvelope(`${usage}: exactly one params object`);
  const [entry] = params;
  const extra = Object.keys(entry!).find((key) => key !== 'idws_journal');
  if (extra !== undefined)
    throw invalidEnvelope(`${usage}: "${extra.slice(0, 64)}" is not allowed beside it`);
  const raw = entry!.idws_journal;
  const id = typeof raw === 'string' && JOURNAL_ID.test(raw) ? Number(raw) : raw;
  if (typeof id !== 'number' || !Number.isSafeInteger(id) || id < 1) {
    throw invalidEnvelope(`${usage}: the journal id must be a positive integer without leading zero`);
  }
  return id;
}
