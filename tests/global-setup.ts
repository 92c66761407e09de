import { demoSnapshot } from '../infra/local/demo-database.js';

/** Builds the demo database once for the whole run; test files open copies of it. */
export default async function setup() {
  const started = Date.now();
  const path = await demoSnapshot();
  console.log(`demo database ready (${path.split('/').pop()}) in ${Date.now() - started} ms`);
}
