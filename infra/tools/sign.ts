import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { signatureHeader } from '../../shared/core/web-api/signature.js';

// Usage: WEB_API_HASH=<api hash> npm run -s sign -- <body file> [--hash <api hash>] [--time <unix seconds>]
// Prints the x-svc-signature value for the exact bytes of the file (send them with curl --data-binary @file).
const args = process.argv.slice(2);
const option = (name: string) => {
  const index = args.indexOf(name);
  if (index < 0) return undefined;
  const [value] = args.splice(index, 2).slice(1);
  return value;
};
const apiHash = option('--hash') ?? process.env.WEB_API_HASH;
const time = option('--time');
const file = args[0];
if (!file || !apiHash || (time !== undefined && !/^[0-9]{1,15}$/.test(time))) {
  console.error(
    'usage: WEB_API_HASH=<api hash> npm run -s sign -- <body file> [--hash <api hash>] [--time <unix seconds>]',
  );
  process.exit(2);
}
// npm runs scripts in the package root; a relative path means the caller's directory.
const body = await readFile(resolve(process.env.INIT_CWD ?? process.cwd(), file));
// The time stamp is signed exactly as written (a leading zero included), as the service checks it.
console.log(signatureHeader(apiHash, body, time));
