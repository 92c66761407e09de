import { AsyncLocalStorage } from 'node:async_hooks';
import { processWide } from '../core/process-wide.js';
import { type DatabasePoolSettings, getSettings } from './settings.js';

/**
 * The function instance an invocation runs in, as far as the database pools care: pools are one
 * per instance and SQL Server, of the instance's size. In Lambda a process is one instance of one
 * function, so this is always the process, with the settings of its environment (`DB_POOL_*`).
 * The local stack runs every function, and every concurrent invocation of one, in one process: it
 * runs each invocation as the instance Lambda would have used (`runAsFunctionInstance`), so that
 * the database sees what it would see from Lambda, function by function.
 */
export interface FunctionInstance {
  /** '' for the process; the local stack's names are `<function>#<n>`. */
  readonly id: string;
  readonly settings: DatabasePoolSettings;
  /**
   * Runs `task` once the invocation's answer has left, the instance busy until it is done, as
   * Lambda keeps an instance until its extensions are done (shared/lambda/after-answer.ts). The
   * local stack gives it; in Lambda it is the process's extension.
   */
  readonly afterAnswer?: (task: () => Promise<void>) => void;
}

/** One per process (see process-wide.ts): the local stack's packaged functions see the stack's instances. */
const current = processWide('function-instance', () => ({
  storage: new AsyncLocalStorage<FunctionInstance>(),
}));

/** The instance the calling invocation runs in: the process, unless the local stack says otherwise. */
export function currentFunctionInstance(): FunctionInstance {
  return current.storage.getStore() ?? { id: '', settings: getSettings().databasePool };
}

/** Runs `invocation` (and everything it starts) as `instance`. */
export function runAsFunctionInstance<T>(instance: FunctionInstance, invocation: () => T): T {
  return current.storage.run(instance, invocation);
}
