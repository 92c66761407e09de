/**
 * The document store port: files in table `SVCDOC` of a tenant's document database, and the
 * procedures `setFile` may call there.
 */
import type { Transaction } from '../idempotency.js';

/** What is known about a stored file without reading its content. */
export interface StoredFileInfo {
  /** Upper-case GUID. */
  readonly fileGuid: string;
  readonly fileName: string;
  /** As stored; undefined when the file was stored without one. */
  readonly contentType: string | undefined;
  /** Bytes of content. */
  readonly size: number;
  /** Lower-case hex SHA-256 of the content. */
  readonly sha256: string;
}

export interface NewStoredFile extends StoredFileInfo {
  readonly content: Buffer;
}

/** A database procedure as named in the catalogue. */
export interface ProcedureName {
  readonly schema: string;
  readonly name: string;
}

/**
 * The procedure's failure took the service's transaction with it (it ended the transaction
 * itself, or its failure doomed it): nothing more can be written or recorded in it.
 */
export class DocumentTransactionLostError extends Error {
  override readonly name = 'DocumentTransactionLostError';
}

export interface DocumentStore {
  /** Inserts one file; committed when the promise resolves (outside {@link within}). */
  save(file: NewStoredFile): Promise<void>;
  /** Metadata of a file (the size measured on the content itself); undefined when absent. */
  find(fileGuid: string): Promise<StoredFileInfo | undefined>;
  /** The whole content; undefined when the file is absent. */
  readContent(fileGuid: string): Promise<Buffer | undefined>;
  /** `length` bytes of content from byte `offset` (0-based); shorter or empty past the end. */
  readContentSlice(fileGuid: string, offset: number, length: number): Promise<Buffer>;
  /** The procedure as the catalogue spells it (matched case-insensitively); undefined when absent. */
  findProcedure(procedure: ProcedureName): Promise<ProcedureName | undefined>;
  /**
   * Calls a procedure found by {@link findProcedure} with the GUID as its only argument. Within a
   * transaction ({@link within}) it runs behind a save point: its failure undoes its own writes
   * only, unless it took the transaction with it ({@link DocumentTransactionLostError}).
   */
  callProcedure(procedure: ProcedureName, fileGuid: string): Promise<void>;
  /**
   * This store in a transaction of the document database (CONTRACT 5a: the `SVCDOC` row, the
   * procedure's writes and a key's record commit together).
   */
  within(tx: Transaction): DocumentStore;
}
