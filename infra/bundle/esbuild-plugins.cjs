// esbuild plugins for `npm run package` (serverless-esbuild loads this file with require()).
//
// Keeps parts of the SQL Server driver out of every bundle that the service never runs: each
// byte of a bundle is parsed when Lambda loads it, so they cost cold-start time on every call.
// - Azure AD authentication (`@azure/identity`, which brings `@azure/msal-node`, and
//   `@azure/core-auth`), and Always Encrypted's Azure Key Vault provider: the service signs in
//   with SQL logins only (user and password in the tenant's connection string).
// - iconv-lite's double-byte code page tables (cp932/936/949/950, Big5, GBK, EUC-JP, Shift_JIS):
//   only `varchar`/`char`/`text` columns under a Japanese, Chinese or Korean collation decode
//   through them. Single-byte code pages (cp1250 for Central Europe, cp1252...) and every
//   `nvarchar` column are unaffected.
// What is left out is replaced by a module that throws a clear error when it is used: the Azure
// modules at the first call of one of their exports (tedious loads them eagerly), a code page
// table when the driver loads it (iconv-lite loads those on first use of the code page).

const path = require('node:path');

const LEFT_OUT = {
  azure:
    'Azure AD authentication is not bundled: the gateway signs in to SQL Server with SQL logins ' +
    '(user and password in the connection string). See README "Cold starts".',
  codepage:
    'Double-byte code pages (Japanese, Chinese, Korean collations) are not bundled: use nvarchar ' +
    'columns or a single-byte collation. See README "Cold starts".',
};

/** A CommonJS module whose every export throws `message` when called or constructed. */
function throwingModule(message) {
  return `const fail = function () { throw new Error(${JSON.stringify(message)}); };
module.exports = new Proxy({}, { get: (_target, key) => (key === '__esModule' ? false : fail) });`;
}

/** A CommonJS module that throws `message` as soon as it is loaded. */
function failingModule(message) {
  return `throw new Error(${JSON.stringify(message)});`;
}

/** @type {import('esbuild').Plugin} */
const leaveOutUnusedDriverParts = {
  name: 'leave-out-unused-driver-parts',
  setup(build) {
    build.onResolve({ filter: /^@azure\/(identity|core-auth|keyvault-keys)$/ }, (args) => ({
      path: args.path,
      namespace: 'left-out-azure',
    }));
    build.onResolve({ filter: /^\.\/tables\/[^/]+\.json$/ }, (args) =>
      /[\\/]iconv-lite[\\/]encodings$/.test(args.resolveDir)
        ? { path: args.path, namespace: 'left-out-codepage' }
        : undefined,
    );
    build.onLoad({ filter: /.*/, namespace: 'left-out-azure' }, () => ({
      contents: throwingModule(LEFT_OUT.azure),
      loader: 'js',
    }));
    build.onLoad({ filter: /.*/, namespace: 'left-out-codepage' }, () => ({
      contents: failingModule(LEFT_OUT.codepage),
      loader: 'js',
    }));
  },
};

/**
 * Names a function's chunks `<entry>.chunks/...` beside its bundle. serverless-esbuild builds each
 * function on its own into one folder and zips every file there except the other functions'
 * bundles and what starts with their name and a dot: this keeps each zip to its own chunks.
 * @type {import('esbuild').Plugin}
 */
const chunksBesideTheirEntry = {
  name: 'chunks-beside-their-entry',
  setup(build) {
    const options = build.initialOptions;
    const entries = Array.isArray(options.entryPoints) ? options.entryPoints : [];
    if (!options.splitting || entries.length !== 1 || typeof entries[0] !== 'string') return;
    const entryName = path.basename(entries[0]).replace(/\.[^.]+$/, '');
    options.chunkNames = `${entryName}.chunks/[name]-[hash]`;
  },
};

module.exports = [chunksBesideTheirEntry, leaveOutUnusedDriverParts];
