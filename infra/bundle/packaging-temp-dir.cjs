// Serverless plugin: the temporary files of one `osls` run (package, deploy, remove) go to a
// directory of that run's own, removed when the run ends.
//
// Why: serverless-esbuild (1.57) stages each function's zip in a new directory under os.tmpdir()
// and never removes it: its clean-up is a non-recursive remove of a full directory, whose failure
// it ignores (floydspace/serverless-esbuild#589). That is ~5 MB per function and run, 50 MB per
// `npm run package` here, and it had grown to 13 GB in /tmp on a machine that packages in every
// test run. os.tmpdir() reads TMPDIR (TMP and TEMP on Windows) at each call, so setting them when
// the plugins are loaded, before anything is built, moves every staging directory into this one.

'use strict';

const { mkdtempSync, rmSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');

class PackagingTempDir {
  constructor() {
    const dir = mkdtempSync(join(tmpdir(), 'erp-gateway-osls-'));
    for (const name of ['TMPDIR', 'TMP', 'TEMP']) process.env[name] = dir;
    // On every way out that lets Node finish (process.exit included), not on a kill.
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    this.hooks = {};
  }
}

module.exports = PackagingTempDir;
