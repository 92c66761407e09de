import type { LargeObjectStore } from '../../shared/core/answers.js';
import type { DocumentStore, NewStoredFile, ProcedureName } from '../../shared/core/files/document-store.js';

/** An in-memory {@link DocumentStore} that records what the core asked of it. */
export function memoryDocumentStore(
  procedures: ProcedureName[] = [{ schema: 'dbo', name: 'DEMO_FILE_RECEIVED' }],
) {
  const files = new Map<string, NewStoredFile>();
  const calls: { procedure: ProcedureName; fileGuid: string }[] = [];
  const reads = { whole: 0, slices: [] as { offset: number; length: number }[] };
  const failures: { call?: Error } = {};
  const store: DocumentStore = {
    async save(file) {
      files.set(file.fileGuid, file);
    },
    async find(fileGuid) {
      const file = files.get(fileGuid);
      if (!file) return undefined;
      const { content, ...info } = file;
      return { ...info, size: content.length };
    },
    async readContent(fileGuid) {
      reads.whole += 1;
      return files.get(fileGuid)?.content;
    },
    async readContentSlice(fileGuid, offset, length) {
      reads.slices.push({ offset, length });
      return files.get(fileGuid)?.content.subarray(offset, offset + length) ?? Buffer.alloc(0);
    },
    async findProcedure(wanted) {
      return procedures.find(
        (p) =>
          p.schema.toLowerCase() === wanted.schema.toLowerCase() &&
          p.name.toLowerCase() === wanted.name.toLowerCase(),
      );
    },
    async callProcedure(procedure, fileGuid) {
      if (failures.call) throw failures.call;
      calls.push({ procedure, fileGuid });
    },
    // No transaction to roll back in memory: the databases' tests prove that.
    within: () => store,
  };
  return { store, files, calls, reads, failures };
}

/** An in-memory {@link LargeObjectStore}; presigned URLs are fake. */
export function memoryObjectStore() {
  const objects = new Map<
    string,
    { chunks: Buffer[]; contentType: string; contentDisposition?: string; done: boolean; aborted: boolean }
  >();
  const store: LargeObjectStore = {
    startUpload(key, contentType, contentDisposition) {
      const object = { chunks: [] as Buffer[], contentType, contentDisposition, done: false, aborted: false };
      objects.set(key, object);
      return {
        write: async (chunk) => void object.chunks.push(chunk),
        complete: async () => {
          object.done = true;
        },
        abort: async () => {
          object.aborted = true;
        },
      };
    },
    presignGet: async (key, seconds) => `https://bucket.example/${key}?X-Amz-Expires=${seconds}`,
  };
  return { store, objects };
}
