// esbuild plugins for `npm run package` (serverless-esbuild loads this file with require()).
//
// Keeps out of every bundle what the service never runs, and replaces with less what it runs
// little of: each byte of a chunk is parsed (and its module bodies run) the first time a request
// loads it, so they cost the first request of every cold start (docs/development.md "Cold starts").
// Parts of the SQL Server driver:
// - Azure AD authentication (`@azure/identity`, which brings `@azure/msal-node`, and
//   `@azure/core-auth`), Always Encrypted's Azure Key Vault provider, and NTLM (Windows)
//   authentication's MD4 (`js-md4`): the service signs in with SQL logins only (user and
//   password in the tenant's connection string).
// - iconv-lite's double-byte code page tables (cp932/936/949/950, Big5, GBK, EUC-JP, Shift_JIS):
//   only `varchar`/`char`/`text` columns under a Japanese, Chinese or Korean collation decode
//   through them. Single-byte code pages (cp1250 for Central Europe, cp1252...) and every
//   `nvarchar` column are unaffected.
// - iconv-lite's other single-byte tables (ISO-8859-x, Mac, KOI8...): only the code pages a SQL
//   Server collation can have (the `CP...` names of tedious's lib/collation.js, read at build time)
//   are kept.
// - js-joda (200 KB, initialised when the driver loads): tedious uses three calls of it to count
//   days when it writes a date parameter; infra/bundle/js-joda-days.cjs does that instead.
// - readable-stream (tedious's copy, ~90 KB with its polyfills), which only `bl`'s stream wrapper
//   needs: tedious uses `bl` as a plain BufferList (append, slice, consume, readUInt16BE, length),
//   so it gets bl's BufferList, which needs no stream.
// - `debug` (mssql's log lines, shown with DEBUG=mssql:*): loaded only when DEBUG is set, so that
//   its `tty` and `util` setup does not cost every cold start.
// - `util` as tedious's debug.js takes it: not copied property by property (which loads util's
//   lazy parts).
// Parts of the AWS SDK (the functions carry the SDK clients they use: docs/development.md "Cold starts"):
// - the credential providers Lambda never gets to: Lambda gives a function its role's credentials
//   in the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN), the first
//   link of the SDK's default chain. The later links read a profile from ~/.aws files (ini,
//   credential_process, SSO, `aws login`) or a web identity token file (EKS), none of which a
//   Lambda function has; they are replaced by links that say so and pass on to the next one, as
//   the real ones do when their files or variables are absent. The container (ECS) and instance
//   metadata links after them stay bundled.
// - bowser, which parses browser user agents for the SDK's browser build only.
// What is left out is replaced by a module that throws a clear error when it is used: the Azure,
// NTLM and bowser modules at the first call of one of their exports (tedious loads the Azure and
// NTLM ones eagerly), a code page table when the driver loads it (iconv-lite loads those on first
// use of the code page), a single-byte table iconv-lite does not know ("Encoding not recognized").
// And two changes to how the bundles load: Node's builtins are taken with `require`, not
// `import` (see builtinsThroughRequire), and V8 compiles the bundled CommonJS modules' bodies
// once, not twice (infra/bundle/eager-module-bodies.cjs).

const fs = require('node:fs');
const path = require('node:path');
const { builtinModules } = require('node:module');
const { eagerModuleBodies } = require('./eager-module-bodies.cjs');

const LEFT_OUT = {
  azure:
    'Azure AD authentication is not bundled: the gateway signs in to SQL Server with SQL logins ' +
    '(user and password in the connection string). See docs/development.md "Cold starts".',
  ntlm:
    'NTLM (Windows) authentication is not bundled: the gateway signs in to SQL Server with SQL logins ' +
    '(user and password in the connection string). See docs/development.md "Cold starts".',
  codepage:
    'Double-byte code pages (Japanese, Chinese, Korean collations) are not bundled: use nvarchar ' +
    'columns or a single-byte collation. See docs/development.md "Cold starts".',
  credentials:
    'is not bundled: in Lambda the credentials are in the environment (docs/development.md "Cold starts")',
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
    build.onResolve({ filter: /^js-md4$/ }, (args) =>
      inPackage('tedious', args.importer) ? { path: args.path, namespace: 'left-out-ntlm' } : undefined,
    );
    build.onLoad({ filter: /.*/, namespace: 'left-out-ntlm' }, () => ({
      contents: throwingModule(LEFT_OUT.ntlm),
      loader: 'js',
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

/** The file `request` resolves to from `dir`, as Node would. */
const resolveFrom = (dir, request) => require.resolve(request, { paths: [dir] });
const inPackage = (name, file) =>
  file
    .split(/[\\/]node_modules[\\/]/)
    .pop()
    .startsWith(`${name}/`);

/**
 * The code pages tedious can ask iconv-lite for: the `CP...` names of its collation table
 * (lib/collation.js), lower-cased as iconv-lite looks them up.
 */
function collationCodePages(tediousDir) {
  const source = fs.readFileSync(path.join(tediousDir, 'lib', 'collation.js'), 'utf8');
  const names = new Set([...source.matchAll(/'(CP\d+)'/g)].map((m) => m[1].toLowerCase()));
  if (names.size < 10)
    throw new Error(`tedious's lib/collation.js names only ${names.size} code pages: check it`);
  return names;
}

/**
 * iconv-lite's sbcs-data-generated.js with only the tables of `wanted` and the aliases that lead
 * to them (through sbcs-data.js's aliases too).
 */
function singleByteTables(generatedFile, wanted) {
  const generated = require(generatedFile);
  const aliases = require(path.join(path.dirname(generatedFile), 'sbcs-data.js'));
  const kept = {};
  for (const name of wanted) {
    for (let key = name, hops = 0; key !== undefined && hops < 10; hops++) {
      const value = key in generated ? generated[key] : aliases[key];
      if (key in generated) kept[key] = generated[key];
      key = typeof value === 'string' ? value : undefined;
    }
  }
  return kept;
}

/**
 * Smaller stand-ins for parts of the driver every first database call loads (see the top of this
 * file): js-joda, readable-stream (through `bl`), `debug`, and iconv-lite's single-byte tables.
 * @type {import('esbuild').Plugin}
 */
const lighterDriver = {
  name: 'lighter-driver',
  setup(build) {
    build.onResolve({ filter: /^@js-joda\/core$/ }, (args) =>
      inPackage('tedious', args.importer) ? { path: path.join(__dirname, 'js-joda-days.cjs') } : undefined,
    );
    /** Where esbuild itself resolves `args.path` (this plugin's own resolutions skipped). */
    const resolved = async (args) => {
      const result = await build.resolve(args.path, {
        importer: args.importer,
        resolveDir: args.resolveDir,
        kind: args.kind,
        pluginData: { lighterDriver: 'skip' },
      });
      if (result.errors.length) throw new Error(`${args.path}: ${result.errors[0].text}`);
      return result.path;
    };
    build.onResolve({ filter: /^bl$/ }, async (args) =>
      inPackage('tedious', args.importer) && args.pluginData?.lighterDriver !== 'skip'
        ? { path: path.join(path.dirname(await resolved(args)), 'BufferList.js') }
        : undefined,
    );
    build.onResolve({ filter: /^debug$/ }, async (args) =>
      args.pluginData?.lighterDriver === 'skip'
        ? undefined
        : { path: await resolved(args), namespace: 'debug-when-asked' },
    );
    build.onLoad({ filter: /.*/, namespace: 'debug-when-asked' }, (args) => ({
      contents: `// The real \`debug\` only when DEBUG names something to log; else loggers that are off.
function off(namespace) {
  const log = function () {};
  log.namespace = namespace;
  log.enabled = false;
  log.log = function () {};
  log.destroy = function () { return false; };
  log.extend = function (sub, delimiter) {
    return off(namespace + (delimiter === undefined ? ':' : delimiter) + sub);
  };
  return log;
}
function createDebug(namespace) { return off(namespace); }
createDebug.enabled = function () { return false; };
createDebug.enable = function () {};
createDebug.disable = function () { return ''; };
createDebug.names = [];
createDebug.skips = [];
createDebug.formatters = {};
module.exports = process.env.DEBUG ? require(${JSON.stringify(args.path)}) : createDebug;`,
      loader: 'js',
      resolveDir: path.dirname(args.path),
    }));
    // tedious's lib/debug.js takes `util` through Babel's `_interopRequireWildcard`, which copies
    // every property of it with its descriptor; reading the descriptors of util's lazily loaded
    // parts loads them (parseArgs, the stream and diff modules, worker_threads: ~40 internal
    // modules). Given util behind an object marked `__esModule`, the interop copies nothing, and
    // every property read (`util.inspect`) reaches util itself through the prototype.
    build.onResolve({ filter: /^(node:)?util$/ }, (args) =>
      inPackage('tedious', args.importer) && args.kind === 'require-call'
        ? { path: 'util', namespace: 'util-not-copied' }
        : undefined,
    );
    build.onLoad({ filter: /.*/, namespace: 'util-not-copied' }, () => ({
      contents: `module.exports = Object.create(require("node:util"), { __esModule: { value: true } });`,
      loader: 'js',
    }));
    let codePages;
    build.onLoad({ filter: /[\\/]iconv-lite[\\/]encodings[\\/]sbcs-data-generated\.js$/ }, (args) => {
      codePages ??= collationCodePages(path.dirname(resolveFrom(process.cwd(), 'tedious/package.json')));
      return {
        contents: `module.exports = ${JSON.stringify(singleByteTables(args.path, codePages))};`,
        loader: 'js',
      };
    });
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

const BUILTINS = new Set(builtinModules);

/**
 * Node's builtins through `require` (the banner's createRequire), not `import`. An ES module import
 * of a builtin makes Node build its ES module face, which reads every property of the builtin,
 * getters included: `import { request } from "node:http"` loads undici (for http.WebSocket, ~100
 * internal modules), `node:process` creates stdin/stdout/stderr and the diagnostic report,
 * `node:crypto` WebCrypto, `node:util`/`node:fs` their streams. `require` reads nothing it is not
 * asked for; what the bundle then reads from the module is the same object's same property.
 * @type {import('esbuild').Plugin}
 */
const builtinsThroughRequire = {
  name: 'builtins-through-require',
  setup(build) {
    build.onResolve({ filter: /^[a-z_:/]+$/ }, (args) => {
      if (args.kind !== 'import-statement' && args.kind !== 'dynamic-import') return undefined;
      // OpenTelemetry's OTLP exporter takes `Agent` and `request` from `await import('http')`: the
      // chunk made here has only a default export, so they would be undefined ("_ is not a
      // constructor"). Left to Node there: only a function exporting spans loads it, once.
      if (args.kind === 'dynamic-import' && inPackage('@opentelemetry/otlp-exporter-base', args.importer)) {
        return undefined;
      }
      const name = args.path.startsWith('node:') ? args.path.slice(5) : args.path;
      if (!BUILTINS.has(name) && !BUILTINS.has(args.path)) return undefined;
      return { path: `node:${name}`, namespace: 'builtin-require' };
    });
    build.onLoad({ filter: /.*/, namespace: 'builtin-require' }, (args) => ({
      contents: `module.exports = require(${JSON.stringify(args.path)});`,
      loader: 'js',
    }));
  },
};

module.exports = [
  chunksBesideTheirEntry,
  builtinsThroughRequire,
  leaveOutUnusedDriverParts,
  lighterDriver,
  leaveOutUnusedSdkParts,
  eagerModuleBodies,
];
