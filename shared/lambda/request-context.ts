import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import type { TenantConfig } from '../config/tenants.js';
import type { Caller } from '../core/auth/caller.js';
import type { Log, LogFields } from '../core/log.js';
import { continueTrace, type TraceContext } from '../core/trace-context.js';
import { serviceLog } from './observability.js';

/** An HTTP request as the service's routes see it: no Lambda event shapes beyond http.ts. */
export interface HttpRequest {
  readonly method: string;
  readonly path: string;
  readonly params: Readonly<Record<string, string | undefined>>;
  readonly query: URLSearchParams;
  /** Lower-case header names. */
  readonly headers: Readonly<Record<string, string | undefined>>;
  readonly body: Buffer;
  readonly requestId: string;
  /**
   * When the request arrived at the gateway (ms since the epoch, `requestContext.timeEpoch`),
   * never later than the handler's own clock nor more than the gateway's 30 s earlier.
   */
  readonly arrivedAt?: number;
}

export interface HttpResponse {
  readonly status: number;
  readonly headers?: Record<string, string>;
  readonly body?: string | Buffer;
}

/**
 * One HTTP request on its way through the service, in the manner of Hono's `Context`: made where
 * the event enters (http.ts), handed to the route as a value, and told on the way what is learnt
 * of the request (its tenant, its caller), so that what needs it later (the answer's headers, the
 * log lines, the slot given back after the answer) finds it here rather than in a map keyed by the
 * request. A value passed along rather than AsyncLocalStorage: on Node 22 that hooks every promise
 * of the process, which the driver's and the SDK's many promises would pay for on every request.
 */
export class RequestContext {
  /** The event as it arrived, for the request's summary line; routes read {@link request}. */
  readonly event: APIGatewayProxyEventV2;
  readonly request: HttpRequest;
  /** When the handler took the event (`performance.now()`), for the summary line's duration. */
  readonly startedAt: number;
  /** When the invocation's time is up (ms since the epoch), where the Lambda context tells it. */
  readonly deadline: number | undefined;
  /**
   * Aborts just before the invocation's time is up (middy's early time-out, tied on by
   * {@link cancelWith}): work bound to it, such as database statements, is cancelled rather than
   * left running.
   */
  readonly signal: AbortSignal;
  /**
   * The `RateLimit-Policy` field of a request counted against its tenant's fair share
   * (tenant-admission.ts): every answer of a counted request carries it. Unset for one not counted.
   */
  rateLimitPolicy: string | undefined;
  /** The code of the error the request was answered with, for its summary line. */
  errorCode: string | undefined;
  /**
   * The request's `Idempotency-Key` (CONTRACT 5a, issue 48), once read: its answer is recorded
   * under it for the tenant and the caller, in the transaction of the call's effects.
   */
  idempotencyKey: string | undefined;
  /**
   * The service's server span for the request (CONTRACT 8a): a child of the caller's `traceparent`,
   * or a new trace without a valid one. Every answer carries it, every log line of the request its
   * trace id, and every message the request sends continues it.
   */
  readonly trace: TraceContext;
  /** The Web API journal row of the call, once opened: its summary line names it beside the trace id. */
  journalId: number | undefined;
  readonly #cancel = new AbortController();
  #tenant: TenantConfig | undefined;
  #caller: Caller | undefined;
  /** How each line of the request names its caller (CONTRACT 4d), once known. */
  #callerName: string | undefined;

  /** The service's log, each line with the request's own fields (its caller, once known) beside those given. */
  readonly log: Log = {
    debug: (message, fields) => serviceLog().debug(message, this.#withOwnFields(fields)),
    info: (message, fields) => serviceLog().info(message, this.#withOwnFields(fields)),
    warn: (message, fields) => serviceLog().warn(message, this.#withOwnFields(fields)),
    error: (message, fields) => serviceLog().error(message, this.#withOwnFields(fields)),
  };

  constructor(
    event: APIGatewayProxyEventV2,
    request: HttpRequest,
    options: { readonly startedAt: number; readonly deadline?: number },
  ) {
    this.event = event;
    this.request = request;
    this.startedAt = options.startedAt;
    this.deadline = options.deadline;
    this.signal = this.#cancel.signal;
    this.trace = continueTrace(request.headers);
  }

  get requestId(): string {
    return this.request.requestId;
  }

  /** The tenant the path names, once known and admitted to its fair share (tenant.ts). */
  get tenant(): TenantConfig | undefined {
    return this.#tenant;
  }

  /** Who made the request, once authenticated (caller-auth.ts). */
  get caller(): Caller | undefined {
    return this.#caller;
  }

  /** The tenant is known: the route sees it from now on. */
  setTenant(tenant: TenantConfig): TenantRequestContext {
    this.#tenant = tenant;
    return this as TenantRequestContext;
  }

  /** The caller is authenticated: the route sees it, and every later line of the request names it `name`. */
  setCaller(this: TenantRequestContext, caller: Caller, name: string): CallerRequestContext {
    this.#caller = caller;
    this.nameCaller(name);
    return this as CallerRequestContext;
  }

  /** Names the caller in every later line of the request, where there is no {@link Caller} (the token endpoint's client). */
  nameCaller(name: string): void {
    this.#callerName = name;
  }

  /** Ties the request's {@link signal} to `invocation`'s: when the invocation's time is up, the request's work stops. */
  cancelWith(invocation: AbortSignal): void {
    const cancel = () => this.#cancel.abort(invocation.reason);
    if (invocation.aborted) cancel();
    else invocation.addEventListener('abort', cancel, { once: true });
  }

  /** The trace id on every line (CONTRACT 8a), the caller's name once known; a line's own fields win. */
  #withOwnFields(given: LogFields | undefined): LogFields {
    const named = this.#callerName !== undefined && given?.caller === undefined;
    return { traceId: this.trace.traceId, ...given, ...(named ? { caller: this.#callerName } : {}) };
  }
}

/** A request whose tenant is known and admitted: what a tenant's route is given (tenant.ts). */
export type TenantRequestContext = RequestContext & { readonly tenant: TenantConfig };

/** A tenant's request whose caller is authenticated too: what a Data API route is given (data-api.ts). */
export type CallerRequestContext = TenantRequestContext & { readonly caller: Caller };
