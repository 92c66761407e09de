import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import aws4 from 'aws4';

/** A DynamoDB error answer: its type (`ConditionalCheckFailedException`, …), message and, where given, the item. */
export class DynamoDbError extends Error {
  override readonly name = 'DynamoDbError';
  constructor(
    /** The error's type without its namespace, e.g. `ConditionalCheckFailedException`. */
    readonly type: string,
    message: string,
    readonly status: number,
    /** The item that failed a condition (`ReturnValuesOnConditionCheckFailure: ALL_OLD`). */
    readonly item?: Record<string, AttributeValue>,
  ) {
    super(`${type}: ${message}`);
  }
}

/** DynamoDB's attribute values as its JSON protocol writes them (the few kinds the limiter uses). */
export type AttributeValue =
  | { readonly S: string }
  | { readonly N: string }
  | { readonly M: Record<string, AttributeValue> };

/**
 * DynamoDB's JSON protocol (`POST /`, `X-Amz-Target: DynamoDB_20120810.<Action>`), signed with
 * Signature Version 4 by `aws4`, over one kept-alive connection pool. Why not
 * `@aws-sdk/client-dynamodb`: the limiter makes one call before a request's work and one after
 * its answer, within a budget of 2 ms; the SDK's middleware stack, schema serialisation and
 * signer took 1.1 ms of the event loop per call here (measured: `npm run bench fair-share`, and a
 * conditional write alone: 1.7 ms against 0.8 ms this way), most of the budget before the
 * network. The calls are two (UpdateItem, GetItem) and fixed, so the protocol is small; the
 * signature, the part that must be right, is aws4's (a library made for exactly this).
 * No retries: the caller's time limit is the bound.
 */
export class DynamoDbJsonClient {
  private readonly region: string;
  private readonly credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
  private readonly url: URL;
  private readonly agent: HttpAgent | HttpsAgent;
  private readonly send: typeof httpRequest;

  constructor(
    options: {
      /** `AWS_ENDPOINT_URL_DYNAMODB` where set (the local stack's dynalite); else the region's. */
      readonly endpoint?: string;
      readonly region?: string;
      /** Lambda's role credentials are in the environment (aws4 reads them there when none are given). */
      readonly credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
    } = {},
  ) {
    this.region =
      options.region ?? process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION ?? 'eu-central-1';
    this.url = new URL(options.endpoint ?? `https://dynamodb.${this.region}.amazonaws.com`);
    this.credentials = options.credentials;
    const secure = this.url.protocol === 'https:';
    this.agent = secure
      ? new HttpsAgent({ keepAlive: true, maxSockets: 50 })
      : new HttpAgent({ keepAlive: true, maxSockets: 50 });
    this.send = (secure ? httpsRequest : httpRequest) as typeof httpRequest;
  }

  /**
   * The headers of one signed call (Signature Version 4, by aws4): `amzDate` (`YYYYMMDDTHHMMSSZ`)
   * only where a test fixes the time.
   */
  signedHeaders(action: 'UpdateItem' | 'GetItem', body: string, amzDate?: string): Record<string, string> {
    const signed = aws4.sign(
      {
        host: this.url.host,
        path: '/',
        method: 'POST',
        service: 'dynamodb',
        region: this.region,
        headers: {
          'content-type': 'application/x-amz-json-1.0',
          'x-amz-target': `DynamoDB_20120810.${action}`,
          ...(amzDate ? { 'X-Amz-Date': amzDate } : {}),
        },
        body,
      },
      this.credentials,
    );
    return Object.fromEntries(
      Object.entries(signed.headers ?? {}).map(([name, value]) => [name, String(value)]),
    );
  }

  /**
   * One action; its answer's JSON, or a `DynamoDbError` (or the network's error, or a time-out). A
   * kept-alive connection the server closed while it was idle fails the request written on it
   * (ECONNRESET, "socket hang up") before the server read it: that request is sent once more, on a
   * new connection, as Node's documentation advises (`request.reusedSocket`) and the AWS SDK does.
   */
  async call<T>(action: 'UpdateItem' | 'GetItem', input: object, timeoutMs: number): Promise<T> {
    const body = JSON.stringify(input);
    const headers = this.signedHeaders(action, body);
    const deadline = Date.now() + timeoutMs;
    try {
      return await this.attempt<T>(headers, body, timeoutMs);
    } catch (error) {
      const closedWhileIdle =
        (error as { reusedSocket?: boolean }).reusedSocket === true &&
        (error as NodeJS.ErrnoException).code === 'ECONNRESET';
      const left = deadline - Date.now();
      if (!closedWhileIdle || left <= 0) throw error;
      return this.attempt<T>(headers, body, left);
    }
  }

  private attempt<T>(headers: Record<string, string>, body: string, timeoutMs: number): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const sent = this.send(
        {
          protocol: this.url.protocol,
          hostname: this.url.hostname,
          port: this.url.port || undefined,
          path: '/',
          method: 'POST',
          headers,
          agent: this.agent,
          signal: AbortSignal.timeout(timeoutMs),
        },
        (answer) => {
          const chunks: Buffer[] = [];
          answer.on('data', (chunk: Buffer) => chunks.push(chunk));
          answer.on('error', reject);
          answer.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let parsed: Record<string, unknown>;
            try {
              parsed = text ? (JSON.parse(text) as Record<string, unknown>) : {};
            } catch {
              reject(
                new DynamoDbError('UnreadableAnswer', `HTTP ${answer.statusCode}`, answer.statusCode ?? 0),
              );
              return;
            }
            const status = answer.statusCode ?? 0;
            if (status >= 200 && status < 300) {
              resolve(parsed as T);
              return;
            }
            const type = String(parsed.__type ?? `HTTP${status}`).replace(/^.*#/, '');
            const message = String(parsed.message ?? parsed.Message ?? '');
            reject(
              new DynamoDbError(
                type,
                message,
                status,
                parsed.Item as Record<string, AttributeValue> | undefined,
              ),
            );
          });
        },
      );
      sent.on('error', (error) => reject(Object.assign(error, { reusedSocket: sent.reusedSocket })));
      sent.end(body);
    });
  }

  /** Closes the kept-alive connections (tests; a Lambda process never ends otherwise). */
  destroy(): void {
    this.agent.destroy();
  }
}
