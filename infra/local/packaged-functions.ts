import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Script, constants as vmConstants } from 'node:vm';
import { inflateRawSync } from 'node:zlib';
import { ownerEnded } from './process-alive.js';
import { readServerlessConfig } from './serverless-config.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

export type LocalFunctions = 'source' | 'packaged';

/**
 * `LOCAL_FUNCTIONS` (CONTRACT.md section 3): `source` (default) runs the handlers from the
 * TypeScript sources; `packaged` runs every handler from its zip in `.serverless/`, as Lambda
 * would, after `npm run package`.
 */
export function localFunctions(): LocalFunctions {
  const value = process.env.LOCAL_FUNCTIONS || 'source';
  if (value !== 'source' && value !== 'packaged') {
    throw new Error(`LOCAL_FUNCTIONS must be "source" or "packaged"; got "${value}"`);
  }
  return value;
}

/** The files of a zip archive (stored or deflated entries, as serverless writes them). */
export function readZip(zip: Buffer): Map<string, Buffer> {
  // End of central directory: the last signature 0x06054b50 (a comment may follow it).
  const end = zip.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  if (end < 0) throw new Error('not a zip archive');
  const count = zip.readUInt16LE(end + 10);
  let at = zip.readUInt32LE(end + 16);
  const files = new Map<string, Buffer>();
  for (let i = 0; i < count; i++) {
    if (zip.readUInt32LE(at) !== 0x02014b50) throw new Error('corrupt zip central directory');
    const method = zip.readUInt16LE(at + 10);
    const compressedSize = zip.readUInt32LE(at + 20);
    const nameLength = zip.readUInt16LE(at + 28);
    const extraLength = zip.readUInt16LE(at + 30);
    const commentLength = zip.readUInt16LE(at + 32);
    const localHeader = zip.readUInt32LE(at + 42);
    const name = zip.toString('utf8', at + 46, at + 46 + nameLength);
    at += 46 + nameLength + extraLength + commentLength;
    if (name.endsWith('/')) continue;
    const dataStart =
      localHeader + 30 + zip.readUInt16LE(localHeader + 26) + zip.readUInt16LE(localHeader + 28);
    const data = zip.subarray(dataStart, dataStart + compressedSize);
    if (method === 0) files.set(name, Buffer.from(data));
    else if (method === 8) files.set(name, inflateRawSync(data));
    else throw new Error(`${name}: zip method ${method} is not supported`);
  }
  return files;
}

/**
 * Where this process unpacks the zips: outside the repository, so that nothing the zip lacks can be
 * found in the project's `node_modules` (Lambda has none either). Removed when the process exits;
 * a process that was killed (a test runner's worker) cannot, so each directory is named after its
 * process and the next one removes those of processes that have ended (20 MB each).
 */
let unpackRoot: string | undefined;
const unpacked = new Map<string, Promise<Record<string, unknown>>>();
const UNPACK_PREFIX = 'svc-packaged-';

function unpackDirectory(): string {
  if (!unpackRoot) {
    removeEndedProcessesDirectories();
    const root = mkdtempSync(join(tmpdir(), `${UNPACK_PREFIX}${process.pid}-`));
    unpackRoot = root;
    process.once('exit', () => rmSync(root, { recursive: true, force: true }));
  }
  return unpackRoot;
}

function removeEndedProcessesDirectories(): void {
  for (const entry of readdirSync(tmpdir())) {
    if (!entry.startsWith(UNPACK_PREFIX)) continue;
    const owner = Number(entry.slice(UNPACK_PREFIX.length).split('-')[0]);
    // Only of a process that has ended: a name without an owner may be a running older checkout's.
    if (ownerEnded(owner)) {
      rmSync(join(tmpdir(), entry), { recursive: true, force: true });
    }
  }
}

/**
 * The module of a function's handler as Lambda loads it: its zip from `.serverless/` unpacked on
 * its own (each function once per process) and its entry imported, chunks loaded on demand from
 * beside it.
 */
export function importPackagedModule(
  functionName: string,
  handler: string,
): Promise<Record<string, unknown>> {
  let module = unpacked.get(functionName);
  if (!module) {
    const zipPath = join(ROOT, '.serverless', `${functionName}.zip`);
    if (!statSync(zipPath, { throwIfNoEntry: false })) {
      throw new Error(`LOCAL_FUNCTIONS=packaged: ${zipPath} is missing; run \`npm run package\` first`);
    }
    const dir = join(unpackDirectory(), functionName);
    for (const [path, data] of readZip(readFileSync(zipPath))) {
      const target = join(dir, path);
      mkdirSync(dirname(target), { recursive: true });
      writeFileSync(target, data);
    }
    const entry = join(dir, `${handler.slice(0, handler.lastIndexOf('.'))}.mjs`);
    module = nativeImport(entry);
    unpacked.set(functionName, module);
  }
  return module;
}

/**
 * Loads a bundle with Node's own loader, not the test runner's: vitest loads every module it
 * imports through its own resolver, which finds bare specifiers (`@aws-sdk/…`) in the project's
 * node_modules from anywhere and would hide a module that the zip lacks. Node's own `import()`,
 * as Lambda's runtime loads an ES module handler: the HTTP functions await their extension's
 * registration at the top level (after-answer.ts), which `require` of an ES module refuses. The
 * call is compiled outside the test runner's transform (a script with Node's default loader), so it stays Node's; the
 * bundle's own `import()` of its chunks then stays with Node too, resolved from where the zip was
 * unpacked, as in Lambda.
 */
const nodeImport = new Script('(url) => import(url)', {
  importModuleDynamically: vmConstants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
}).runInThisContext() as (url: string) => Promise<Record<string, unknown>>;
const nativeImport = (path: string) => nodeImport(pathToFileURL(path).href);

/** The function of serverless.yml whose handler this is. */
export function functionOfHandler(handler: string): string {
  const found = Object.entries(readServerlessConfig().functions).find(([, fn]) => fn.handler === handler);
  if (!found) throw new Error(`serverless.yml has no function with the handler ${handler}`);
  return found[0];
}
