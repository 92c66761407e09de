import { execFile } from 'node:child_process';
import { describe, expect, it } from 'vitest';

/** `npm install`'s preinstall notice (infra/tools/node-version-notice.cjs), per the Node npm runs on. */
function notice(userAgent: string) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((done) =>
    execFile(
      process.execPath,
      ['infra/tools/node-version-notice.cjs'],
      { env: { ...process.env, npm_config_user_agent: userAgent } },
      (error, stdout, stderr) => done({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    ),
  );
}

describe('npm install on an older Node', () => {
  it('says in one paragraph that Node 22 is needed, what happens instead, and that EBADENGINE is harmless', async () => {
    const { code, stdout, stderr } = await notice('npm/11.6.2 node/v20.20.2 linux x64 workspaces/false');
    expect({ code, stdout }).toEqual({ code: 0, stdout: '' });
    expect(stderr).toContain(
      'This project needs Node.js 22 or later (package.json "engines"); this npm runs on 20.20.2.',
    );
    expect(stderr).toContain('npm start, npm test\nand npx run on that one');
    expect(stderr).toContain('EBADENGINE warnings');
  });

  it('says nothing on Node 22 or later', async () => {
    for (const agent of ['npm/11.6.2 node/v22.23.0 linux x64', 'npm/11.6.2 node/v24.1.0 linux x64']) {
      expect(await notice(agent)).toEqual({ code: 0, stdout: '', stderr: '' });
    }
  });
});
