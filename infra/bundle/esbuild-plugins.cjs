// esbuild plugins for `npm run package` (serverless-esbuild loads this file with require()).
//
// Keeps parts of the SQL Server driver and of the AWS SDK out of every bundle that the service
// never runs: each byte of a bundle is parsed when Lambda loads it, so they cost cold-start time
// on every call.
// - Azure AD authentication (`@azure/identity`, which brings `@azure/msal-node`, and
//   `@azure/core-auth`), and Always Encrypted's Azure Key Vault provider: the service signs in
//   with SQL logins only (user and password in the tenant's connection string).
// - iconv-lite's double-byte code page tables (cp932/936/949/950, Big5, GBK, EUC-JP, Shift_JIS):
//   only `varchar`/`char`/`text` columns under a Japanese, Chinese or Korean collation decode
//   through them. Single-byte code pages (cp1250 for Central Europe, cp1252...) and every
//   `nvarchar` column are unaffected.
// - The AWS SDK's credential providers Lambda never gets to (the functions carry the SDK clients
//   they use: README "Cold starts"). Lambda gives a function its role's credentials in the
//   environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN), the first link of
//   the SDK's default chain. The later links read a profile from ~/.aws files (ini,
//   credential_process, SSO, `aws login`) or a web identity token file (EKS), none of which a
//   Lambda function has; they are replaced by links that say so and pass on to the next one, as
//   the real ones do when their files or variables are absent. The container (ECS) and instance
//   metadata links after them stay bundled.
// - bowser, which parses browser user agents for the SDK's browser build only.
// What is left out is replaced by a module that throws a clear error when it is used: the Azure
// modules and bowser at the first call of one of their exports (tedious loads the Azure ones
// eagerly), a code page table when the driver loads it (iconv-lite loads those on first use of
// the code page).

const path = require('node:path');

const LEFT_OUT = {
  azure:
    'Azure AD authentication is not bundled: the gateway signs in to SQL Server with SQL logins ' +
    '(user and password in the connection string). See README "Cold starts".',
  codepage:
    'Double-byte code pages (Japanese, Chinese, Korean collations) are not bundled: use nvarchar ' +
    'columns or a single-byte collation. See README "Cold starts".',
  credentials: 'is not bundled: in Lambda the credentials are in the environment (README "Cold starts")',
  bowser: 'bowser (browser user agents of the AWS SDK) is not bundled: the functions run on Node.js',
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

/** A credential provider link that passes on to the next one, as the real one does without its files. */
function skippedProvider(name) {
  return `() => async () => {
  const error = new Error(${JSON.stringify(`${name} ${LEFT_OUT.credentials}`)});
  error.name = 'CredentialsProviderError';
  error.tryNextLink = true;
  throw error;
}`;
}

/**
 * Leaves out the AWS SDK's credential providers a Lambda function never reaches, and bowser
 * (see the top of this file).
 * @type {import('esbuild').Plugin}
 */
const leaveOutUnusedSdkParts = {
  name: 'leave-out-unused-sdk-parts',
  setup(build) {
    build.onResolve(
      { filter: /^@aws-sdk\/credential-provider-(ini|process|web-identity|sso|login)$/ },
      (args) => ({
        path: args.path,
        namespace: 'left-out-credentials',
      }),
    );
    build.onLoad({ filter: /.*/, namespace: 'left-out-credentials' }, (args) => ({
      contents: ['fromIni', 'fromProcess', 'fromTokenFile', 'fromWebToken', 'fromSSO', 'fromLoginCredentials']
        .map((name) => `export const ${name} = ${skippedProvider(`${args.path} (${name})`)};`)
        .join('\n'),
      loader: 'js',
    }));
    build.onResolve({ filter: /^bowser$/ }, (args) => ({ path: args.path, namespace: 'left-out-bowser' }));
    build.onLoad({ filter: /.*/, namespace: 'left-out-bowser' }, () => ({
      contents: throwingModule(LEFT_OUT.bowser),
      loader: 'js',
    }));
  },
};

module.exports = [chunksBesideTheirEntry, leaveOutUnusedDriverParts, leaveOutUnusedSdkParts];
