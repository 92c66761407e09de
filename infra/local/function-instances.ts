import { type FunctionInstance, runAsFunctionInstance } from '../../shared/config/function-instance.js';
import { type DatabasePoolSettings, databasePoolFromEnv } from '../../shared/config/settings.js';
import { readServerlessConfig, resolveParams, type ServerlessConfig } from './serverless-config.js';

/** The variables of a function's database pools (shared/config/settings.ts). */
const POOL_VARIABLES = ['DB_POOL_MAX', 'DB_POOL_ACQUIRE_TIMEOUT_MS', 'DB_POOL_IDLE_TIMEOUT_MS'] as const;

/**
 * The pool settings serverless.yml gives `functionName` (the provider's environment, then the
 * function's own), where the local stack's environment does not set them itself.
 */
export function functionPoolSettings(
  functionName: string,
  config: ServerlessConfig = readServerlessConfig(),
  env: NodeJS.ProcessEnv = process.env,
): DatabasePoolSettings {
  const fn = config.functions[functionName];
  if (!fn) throw new Error(`serverless.yml has no function ${functionName}`);
  const variables: Record<string, string | undefined> = {};
  for (const name of POOL_VARIABLES) {
    const declared = fn.environment?.[name] ?? config.provider.environment?.[name];
    variables[name] =
      env[name] ??
      (typeof declared === 'string' || typeof declared === 'number'
        ? resolveParams(config, String(declared))
        : undefined);
  }
  return databasePoolFromEnv(variables);
}

/** Lambda refused an invocation: the function's reserved concurrency is in use (`TooManyRequestsException`). */
export class LambdaThrottledError extends Error {
  override readonly name = 'TooManyRequestsException';
  constructor(
    readonly functionName: string,
    readonly reservedConcurrency: number,
  ) {
    super(`Rate Exceeded.`);
  }
}

/**
 * Lambda's instances of one function, as the local stack stands for them: an invocation runs in an
 * idle instance, or in a new one when every instance is busy, as Lambda runs it, up to the
 * function's reserved concurrency: beyond it Lambda refuses the invocation (`LambdaThrottledError`),
 * or, for an asynchronous one, keeps it until an instance is free. Each instance has database
 * pools of its own, of its function's size, so that a database sees from the local stack what it
 * would see from Lambda with as many instances. Idle instances' connections close after the idle
 * time-out; the instances themselves are kept, as Lambda keeps warm ones.
 */
export class LocalFunctionInstances {
  private readonly idle: FunctionInstance[] = [];
  private created = 0;
  private busy = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(
    readonly functionName: string,
    readonly settings: DatabasePoolSettings,
    /** serverless.yml's `reservedConcurrency`; none: as many as asked for. */
    readonly reservedConcurrency?: number,
  ) {}

  /** How many instances were ever needed at once. */
  get count(): number {
    return this.created;
  }

  /** Invocations running now. */
  get running(): number {
    return this.busy;
  }

  /**
   * Runs `invocation` in an idle instance, or a new one; the instance is busy until it ends. At the
   * reserved concurrency a synchronous invocation is refused, as Lambda refuses it; with
   * `whenThrottled: 'wait'` (an asynchronous invocation, an event source) it waits for an instance.
   */
  async invoke<T>(
    invocation: () => Promise<T>,
    options: { whenThrottled?: 'refuse' | 'wait' } = {},
  ): Promise<T> {
    while (this.reservedConcurrency !== undefined && this.busy >= this.reservedConcurrency) {
      if (options.whenThrottled !== 'wait')
        throw new LambdaThrottledError(this.functionName, this.reservedConcurrency);
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
    this.busy++;
    const instance = this.idle.pop() ?? {
      id: `${this.functionName}#${++this.created}`,
      settings: this.settings,
    };
    // Work the invocation leaves for after its answer (after-answer.ts): it runs once the answer
    // is returned, and the instance stays busy until it is done, as Lambda keeps an instance until
    // its extensions are (what a request meets at the reserved concurrency is then what AWS does).
    const after: (() => Promise<void>)[] = [];
    let answered = false;
    const running: Promise<void>[] = [];
    const runAfter = (task: () => Promise<void>) =>
      running.push(runAsFunctionInstance(instance, task).catch(() => undefined));
    const invoked: FunctionInstance = {
      ...instance,
      afterAnswer: (task) => {
        if (answered) runAfter(task);
        else after.push(task);
      },
    };
    try {
      return await runAsFunctionInstance(invoked, invocation);
    } finally {
      const free = () => {
        this.idle.push(instance);
        this.busy--;
        this.waiting.shift()?.();
      };
      if (after.length === 0) {
        answered = true;
        free();
      } else {
        // The next turn of the event loop: the caller has the answer by then.
        setImmediate(() => {
          answered = true;
          for (const task of after.splice(0)) runAfter(task);
          void Promise.allSettled(running).then(free);
        });
      }
    }
  }
}

/**
 * A function's reserved concurrency as serverless.yml gives it, with the deploy parameters' defaults;
 * `REQUEST_FUNCTION_CONCURRENCY` in the environment stands for `--param=requestFunctionConcurrency=…`.
 */
export function functionReservedConcurrency(
  functionName: string,
  config: ServerlessConfig = readServerlessConfig(),
  env: NodeJS.ProcessEnv = process.env,
): number | undefined {
  const declared = config.functions[functionName]?.reservedConcurrency;
  if (declared === undefined) return undefined;
  const text = String(declared);
  const value =
    text === '${param:requestFunctionConcurrency}' && env.REQUEST_FUNCTION_CONCURRENCY
      ? env.REQUEST_FUNCTION_CONCURRENCY
      : resolveParams(config, text);
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 1) {
    throw new Error(`${functionName}: reserved concurrency must be a positive integer, got "${value}"`);
  }
  return parsed;
}

/** Every function's instances, made on first use, each function sized from serverless.yml. */
export function localFunctionInstances(config: ServerlessConfig = readServerlessConfig()) {
  const byFunction = new Map<string, LocalFunctionInstances>();
  return {
    of(functionName: string): LocalFunctionInstances {
      let instances = byFunction.get(functionName);
      if (!instances) {
        instances = new LocalFunctionInstances(
          functionName,
          functionPoolSettings(functionName, config),
          functionReservedConcurrency(functionName, config),
        );
        byFunction.set(functionName, instances);
      }
      return instances;
    },
  };
}

export type LocalFunctionInstancesByName = ReturnType<typeof localFunctionInstances>;
