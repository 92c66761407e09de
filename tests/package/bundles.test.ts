import { beforeAll, describe, expect, it } from 'vitest';
import { readServerlessConfig } from '../../infra/local/serverless-config.js';
import {
  codeFiles,
  type PackagedFunction,
  packagedFunctions,
  packageService,
  withPackagingLock,
} from '../support/packaged-service.js';

const KB = 1024;

/**
 * Size budgets of each function's packaged code, in bytes. `entry`: the handler's module, which
 * Lambda parses at every cold start (its size is most of the init time above Node's own start);
 * `total`: every JavaScript file of the zip, chunks loaded on demand included (the SQL Server
 * driver is ~700 KB of it). Each leaves ~60-80 KB of room. `npm run bench cold-start` measures what they cost in time.
 */
const BUDGETS: Record<string, { entry: number; total: number }> = {
  dataGetData: { entry: 130 * KB, total: 900 * KB },
  dataGetDataWithCondition: { entry: 160 * KB, total: 950 * KB },
  dataGetRowsCount: { entry: 130 * KB, total: 900 * KB },
  dataGetDataPaginate: { entry: 130 * KB, total: 900 * KB },
  fileGetFile: { entry: 130 * KB, total: 900 * KB },
  fileSetFile: { entry: 130 * KB, total: 900 * KB },
  deliverWebhook: { entry: 130 * KB, total: 900 * KB },
  webTest: { entry: 130 * KB, total: 950 * KB },
  webGetData: { entry: 140 * KB, total: 950 * KB },
  webGetDataAsync: { entry: 140 * KB, total: 950 * KB },
  webJobWorker: { entry: 130 * KB, total: 900 * KB },
};

let functions: PackagedFunction[];

beforeAll(async () => {
  functions = await withPackagingLock(() => {
    packageService();
    return packagedFunctions();
  });
}, 600_000);

const code = (fn: PackagedFunction) => codeFiles(fn).map(([, data]) => data.toString('utf8'));

describe('npm run package', () => {
  it('has a size budget for every function of serverless.yml', () => {
    expect(Object.keys(BUDGETS).sort()).toEqual(Object.keys(readServerlessConfig().functions).sort());
  });

  it('keeps every function within its size budget', () => {
    const over = functions.flatMap((fn) => {
      const budget = BUDGETS[fn.name]!;
      const entry = fn.files.get(fn.entry)!.length;
      const total = codeFiles(fn).reduce((sum, [, data]) => sum + data.length, 0);
      return [
        ...(entry > budget.entry ? [`${fn.name}: entry ${entry} B > ${budget.entry} B`] : []),
        ...(total > budget.total ? [`${fn.name}: code ${total} B > ${budget.total} B`] : []),
      ];
    });
    expect(over).toEqual([]);
  });

  it('imports the AWS SDK, the SQL Server driver and the XML parser only on demand', () => {
    for (const fn of functions) {
      const entry = fn.files.get(fn.entry)!.toString('utf8');
      // A static import of the SDK would load it during init; `import("@aws-sdk/…")` is lazy.
      expect(entry, fn.name).not.toMatch(/from\s*"@aws-sdk\//);
      // Markers of tedious and fast-xml-parser, which must live in lazily loaded chunks.
      expect(entry, fn.name).not.toContain('Login failed');
      expect(entry, fn.name).not.toContain('"InvalidTag"');
    }
  });

  it('leaves Azure AD authentication and the double-byte code pages out of the driver', () => {
    for (const fn of functions) {
      const all = code(fn).join('\n');
      expect(all, fn.name).toContain('Azure AD authentication is not bundled');
      expect(all, fn.name).toContain('Double-byte code pages');
      // A class name of @azure/msal-node, and the start of a row of iconv-lite's cp936 table.
      expect(all, fn.name).not.toContain('ClientApplication');
      expect(all, fn.name).not.toContain('["8140","\\u4E02');
    }
  });

  it('puts no package.json into a bundle', () => {
    for (const fn of functions) {
      expect(
        [...fn.files.keys()].filter((path) => path.endsWith('package.json')),
        fn.name,
      ).toEqual([]);
      // package.json's description, which only package.json holds.
      expect(code(fn).join('\n'), fn.name).not.toContain('integration gateway for an ERP');
    }
  });

  it('runs without --enable-source-maps (parsing the maps doubled the init time)', () => {
    expect(String(readServerlessConfig().provider.environment?.NODE_OPTIONS ?? '')).not.toContain(
      'enable-source-maps',
    );
  });
});
