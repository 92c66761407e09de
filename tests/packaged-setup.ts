import { packageService, withPackagingLock } from './support/packaged-service.js';

/**
 * Global setup of the runs with LOCAL_FUNCTIONS=packaged (the e2e suite of `npm run test:tsql`):
 * packages the service once, so every local stack of the run loads each handler from the zip Lambda
 * would run. (The project's `env` reaches the test workers, not this setup.)
 */
export default async function setup() {
  const started = Date.now();
  await withPackagingLock(() => packageService());
  console.log(`service packaged for LOCAL_FUNCTIONS=packaged in ${Date.now() - started} ms`);
}
