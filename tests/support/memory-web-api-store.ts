import type { Row } from '../../shared/core/database.js';
import type { ParamObject } from '../../shared/core/web-api/envelope.js';
import {
  type Application,
  type JournalEntry,
  type JournalOpening,
  type Operation,
  OperationFailedError,
  type WebApiStore,
} from '../../shared/core/web-api/store.js';

interface StoredEntry extends Omit<JournalEntry, 'ageSeconds' | 'attempts' | 'leaseHeld'> {
  attempts: number;
  createdAt: number;
  mode: string;
  leaseUntil: number;
}

/** An in-memory Web API store for unit tests of the core; operations are plain functions. */
export function memoryWebApiStore(
  options: {
    applications?: Record<string, Application>;
    operations?: Record<
      number,
      Operation & { run: (params: readonly ParamObject[], signal?: AbortSignal) => Promise<Row[]> }
    >;
    now?: () => number;
  } = {},
) {
  const now = options.now ?? Date.now;
  const applications = options.applications ?? {
    'demo-api-key': { id: 1, apiHashes: ['demo-api-hash'], active: true },
    'inactive-api-key': { id: 3, apiHashes: ['inactive-api-hash'], active: false },
  };
  const operations = options.operations ?? {};
  const journal = new Map<number, StoredEntry>();
  const claimed = new Map<string, number>();
  const calls: { vltyp: number; params: readonly ParamObject[] }[] = [];

  const view = (entry: StoredEntry): JournalEntry => {
    const { createdAt, mode: _mode, leaseUntil, ...rest } = entry;
    return { ...rest, ageSeconds: (now() - createdAt) / 1000, leaseHeld: leaseUntil > now() };
  };

  const store: WebApiStore = {
    async findApplication(apiKey) {
      return Object.hasOwn(applications, apiKey)
        ? applications[apiKey as keyof typeof applications]
        : undefined;
    },
    async claimRequest(applicationId, digest, holdSeconds) {
      const key = `${applicationId}:${digest}`;
      const until = claimed.get(key);
      if (until !== undefined && until > now()) return false;
      claimed.set(key, now() + holdSeconds * 1000);
      return true;
    },
    async findOperation(vltyp) {
      const operation = operations[vltyp];
      return operation ? { vltyp, procedure: operation.procedure, rowName: operation.rowName } : undefined;
    },
    // No transactions in memory: the transactional proof is on the databases (tests/integration).
    within: () => store,
    transaction: (effects) => effects(store),
    async callOperation(operation, params, signal) {
      calls.push({ vltyp: operation.vltyp, params });
      const run = operations[operation.vltyp]?.run;
      if (!run) throw new OperationFailedError(`no procedure ${operation.procedure}`, undefined);
      return run(params, signal);
    },
    async openJournal(opening: JournalOpening) {
      const id = journal.size + 1;
      journal.set(id, {
        id,
        applicationId: opening.applicationId,
        vltyp: opening.vltyp,
        mode: opening.mode,
        state: 'running',
        request: opening.request,
        answer: undefined,
        rowName: undefined,
        attempts: 0,
        createdAt: now(),
        leaseUntil: 0,
      });
      return id;
    },
    async claimAndOpenJournal(claim, opening) {
      const first = await store.claimRequest(claim.applicationId, claim.requestDigest, claim.holdSeconds);
      return first ? store.openJournal(opening) : undefined;
    },
    async finishJournal(id, outcome) {
      const entry = journal.get(id);
      if (entry?.state !== 'running') return false;
      Object.assign(entry, {
        state: outcome.state,
        answer: outcome.answer,
        rowName: outcome.rowName,
        leaseUntil: 0,
      });
      return true;
    },
    async finishAttempt(id, attempt, outcome) {
      const entry = journal.get(id);
      if (entry?.state !== 'running' || entry.attempts !== attempt) return false;
      return store.finishJournal(id, outcome);
    },
    async readJournal(id) {
      const entry = journal.get(id);
      return entry ? view(entry) : undefined;
    },
    async startAttempt(id, leaseSeconds, maxAttempts) {
      const entry = journal.get(id);
      if (entry?.state !== 'running' || entry.leaseUntil > now() || entry.attempts >= maxAttempts) {
        return undefined;
      }
      entry.attempts += 1;
      entry.leaseUntil = now() + leaseSeconds * 1000;
      return view(entry);
    },
    async releaseJob(id, attempt) {
      const entry = journal.get(id);
      if (entry?.state === 'running' && entry.attempts === attempt) entry.leaseUntil = 0;
    },
  };
  return { store, journal, claimed, calls };
}
