import { AfterAnswerExtension } from '../adapters/lambda/after-answer-extension.js';
import { currentFunctionInstance } from '../config/function-instance.js';
import { describeError } from '../core/log.js';
import { processWide } from '../core/process-wide.js';
import { serviceLog } from './observability.js';

/** This process's extension, once registered (one per process: a bundle is one copy in Lambda). */
const registered = processWide('after-answer', () => ({
  extension: undefined as AfterAnswerExtension | undefined,
  registering: undefined as Promise<void> | undefined,
}));

/**
 * Registers this process's after-answer extension, in Lambda (where `AWS_LAMBDA_RUNTIME_API` is
 * set); awaited at the top of an HTTP function's entry file, during its init. Anywhere else it
 * does nothing.
 */
export function registerAfterAnswerExtension(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const runtimeApi = env.AWS_LAMBDA_RUNTIME_API;
  if (!runtimeApi) return Promise.resolve();
  registered.registering ??= AfterAnswerExtension.register(
    runtimeApi,
    'erp-integration-gateway-after-answer',
    (message, error) => serviceLog().warn(message, describeError(error)),
  ).then((extension) => {
    registered.extension = extension;
  });
  return registered.registering;
}

/**
 * Runs `task` after the answer of invocation `requestId` has left, where the host allows it: the
 * local stack's instance, or Lambda's extension; either keeps the instance busy until it is done.
 * Without one (a handler called directly, an extension Lambda refused) it runs now, before the
 * answer. `task` must not throw: what it does after the answer can reach nobody.
 */
export async function afterAnswer(requestId: string, task: () => Promise<void>): Promise<void> {
  const local = currentFunctionInstance().afterAnswer;
  if (local) return local(task);
  if (registered.extension) return registered.extension.defer(requestId, task);
  await task();
}

/** The handler of invocation `requestId` has returned its answer (Lambda's extension starts its work). */
export function answerReturned(requestId: string): void {
  registered.extension?.answered(requestId);
}
