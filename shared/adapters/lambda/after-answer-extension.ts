import { request as httpRequest } from 'node:http';

/**
 * Work after an invocation's answer has left, in Lambda: an internal extension of the function's
 * own process (Lambda Extensions API, AWS Compute Blog "Running code after returning a response
 * from an AWS Lambda function"). Lambda sends the runtime's answer to the caller as soon as the
 * handler returns, but ends the invocation (and may freeze the process) only once every
 * registered extension has asked for its next event: so the extension asks only after the work
 * deferred by that invocation is done. The instance stays busy meanwhile, as it should: it is
 * still working.
 *
 * Registered during the function's init (it must be: Lambda takes registrations only then), from
 * the function's entry file. Without `AWS_LAMBDA_RUNTIME_API` (tests, the local stack) nothing is
 * registered, and the caller runs its work before answering.
 */
export class AfterAnswerExtension {
  private readonly invocations = new Map<string, Invocation>();

  private constructor(
    private readonly runtimeApi: string,
    private readonly id: string,
    private readonly onError: (message: string, error: unknown) => void,
  ) {}

  /**
   * Registers the extension for INVOKE events (an internal extension may not take SHUTDOWN) and
   * starts its loop; undefined when the Extensions API refuses it (then work runs before the answer).
   */
  static async register(
    runtimeApi: string,
    name: string,
    onError: (message: string, error: unknown) => void,
  ): Promise<AfterAnswerExtension | undefined> {
    try {
      const answer = await call(runtimeApi, 'POST', '/2020-01-01/extension/register', {
        headers: { 'lambda-extension-name': name },
        body: JSON.stringify({ events: ['INVOKE'] }),
      });
      const id = answer.headers['lambda-extension-identifier'];
      if (answer.status !== 200 || typeof id !== 'string') {
        onError('after-answer extension not registered', new Error(`HTTP ${answer.status}`));
        return undefined;
      }
      const extension = new AfterAnswerExtension(runtimeApi, id, onError);
      void extension.serve();
      return extension;
    } catch (error) {
      onError('after-answer extension not registered', error);
      return undefined;
    }
  }

  /** Runs `task` after the answer of invocation `requestId` has left, before the invocation ends. */
  defer(requestId: string, task: () => Promise<void>): void {
    const invocation = this.invocation(requestId);
    // The answer is gone already: run now, still before the extension lets the invocation end.
    if (invocation.answered) this.run(invocation, task);
    else invocation.tasks.push(task);
  }

  /** Starts `task` as part of `invocation`'s work after its answer; its failure is only logged. */
  private run(invocation: Invocation, task: () => Promise<void>): void {
    invocation.running.push(task().catch((error) => this.onError('work after the answer failed', error)));
  }

  /**
   * The handler of `requestId` has returned. Its answer is posted by the runtime in the same turn
   * of the event loop (a synchronous call of its native client), so the work starts on the next.
   */
  answered(requestId: string): void {
    setImmediate(() => {
      const invocation = this.invocation(requestId);
      if (invocation.answered) return;
      invocation.answered = true;
      for (const task of invocation.tasks.splice(0)) this.run(invocation, task);
      invocation.settle();
    });
  }

  private invocation(requestId: string): Invocation {
    let invocation = this.invocations.get(requestId);
    if (!invocation) {
      let settle = () => {};
      const settled = new Promise<void>((resolve) => {
        settle = resolve;
      });
      invocation = { tasks: [], running: [], answered: false, settled, settle };
      this.invocations.set(requestId, invocation);
    }
    return invocation;
  }

  /** Asks for the next event once the last invocation's work is done, for the life of the process. */
  private async serve(): Promise<void> {
    for (;;) {
      let event: { eventType?: string; requestId?: string; deadlineMs?: number };
      try {
        const answer = await call(this.runtimeApi, 'GET', '/2020-01-01/extension/event/next', {
          headers: { 'lambda-extension-identifier': this.id },
        });
        event = JSON.parse(answer.body);
      } catch (error) {
        // Without its next call Lambda would end no invocation before its time-out: there is
        // nothing else to do but say so (the runtime is restarted after that time-out).
        this.onError('after-answer extension lost the Extensions API', error);
        return;
      }
      if (event.eventType !== 'INVOKE' || !event.requestId) continue;
      const invocation = this.invocation(event.requestId);
      // The handler's end, but never past the invocation's time (Lambda ends it then anyway).
      const timeLeft = Math.max(0, (event.deadlineMs ?? Date.now()) - Date.now());
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        invocation.settled.then(() => Promise.allSettled(invocation.running)),
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, timeLeft);
        }),
      ]);
      clearTimeout(timer);
      this.invocations.delete(event.requestId);
    }
  }
}

interface Invocation {
  readonly tasks: (() => Promise<void>)[];
  readonly running: Promise<void>[];
  answered: boolean;
  readonly settled: Promise<void>;
  readonly settle: () => void;
}

/**
 * One call of the Extensions API on `runtimeApi` (host:port on loopback). node:http rather than
 * fetch: `next` waits for as long as the process is frozen between invocations, and fetch's own
 * time limits would end it after a long freeze.
 */
function call(
  runtimeApi: string,
  method: 'GET' | 'POST',
  path: string,
  options: { headers: Record<string, string>; body?: string },
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const sent = httpRequest(
      `http://${runtimeApi}${path}`,
      { method, headers: options.headers },
      (answer) => {
        const chunks: Buffer[] = [];
        answer.on('data', (chunk: Buffer) => chunks.push(chunk));
        answer.on('end', () =>
          resolve({
            status: answer.statusCode ?? 0,
            headers: answer.headers,
            body: Buffer.concat(chunks).toString('utf8'),
          }),
        );
        answer.on('error', reject);
      },
    );
    sent.on('error', reject);
    sent.end(options.body);
  });
}
