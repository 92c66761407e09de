/**
 * The document store port: files in table `SVCDOC` of a tenant's document database, and the
 * procedures `setFile` may call there.
 */

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

export interface DocumentStore {
  /** Inserts one file; committed when the promise resolves. */
  save(file: NewStoredFile): Promise<void>;
  /** Metadata of a file (the size measured on the content itself); undefined when absent. */
  find(fileGuid: string): Promise<StoredFileInfo | undefined>;
  /** The whole content; undefined when the file is absent. */
  readContent(fileGuid: string): Promise<Buffer | undefined>;
  /** `length` bytes of content from byte `offset` (0-based); shorter or empty past the end. */
  readContentSlice(fileGuid: string, offset: number, length: number): Promise<Buffer>;
  /** The procedure as the catalogue spells it (matched case-insensitively); undefined when absent. */
  findProcedure(procedure: ProcedureName): Promise<ProcedureName | undefined>;
  /** Calls a procedure found by {@link findProcedure} with the GUID as its only argument. */
  callProcedure(procedure: ProcedureName, fileGuid: string): Promise<void>;
}
