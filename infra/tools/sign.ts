import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { signatureHeader } from '../../shared/core/web-api/signature.js';

// Usage: WEB_API_HASH=<api hash> npm run -s sign -- <body file> [--hash <api hash>] [--time <unix seconds>]
// Prints the x-svc-signature value for the exact bytes of the file (send them with curl --data-binary @file).
// It is called inside `$(…)` in a curl command line, where an empty answer would send no signature and
// leave the user guessing: every mistake is said on stderr, with a non-zero exit.
const USAGE =
  'usage: WEB_API_HASH=<api hash> npm run -s sign -- <body file> [--hash <api hash>] [--time <unix seconds>]\n' +
  '  outside the clone: npm --prefix <clone> run -s sign -- <body file>  (paths are relative to where you are)';

function fail(problem: string): never {
  process.stderr.write(`sign: ${problem}\n${USAGE}\n`);
  process.exit(2);
}

const args = process.argv.slice(2);
const option = (name: string) => {
  const index = args.indexOf(name);
  if (index < 0) return undefined;
  const [, value] = args.splice(index, 2);
  if (value === undefined || value.startsWith('--')) fail(`${name} needs a value`);
  return value;
};
const apiHash = option('--hash') ?? process.env.WEB_API_HASH;
const time = option('--time');
const [file, ...extra] = args;
if (!file) fail('no body file given');
if (extra.length > 0) fail(`unexpected arguments: ${extra.join(' ')}`);
if (!apiHash) fail('no API hash: set WEB_API_HASH or give --hash');
if (time !== undefined && !/^[0-9]{1,15}$/.test(time))
  fail(`--time must be Unix seconds (1 to 15 digits), not "${time}"`);

// npm runs scripts in the package root; a relative path means the caller's directory (INIT_CWD).
const path = resolve(process.env.INIT_CWD ?? process.cwd(), file);
let body: Buffer;
try {
  body = await readFile(path);
} catch (error) {
  const code = (error as NodeJS.ErrnoException).code;
  fail(`cannot read the body file ${path}${code === 'ENOENT' ? ': no such file' : ` (${code ?? 'error'})`}`);
}
// The time stamp is signed exactly as written (a leading zero included), as the service checks it.
console.log(signatureHeader(apiHash, body, time));
