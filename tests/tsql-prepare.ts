import { prepareTsql } from './tsql-global-setup.js';

/** test:tsql e2e project: the prepared T-SQL demo, which every local stack of the run copies. */
export default async function setup() {
  await prepareTsql();
}
