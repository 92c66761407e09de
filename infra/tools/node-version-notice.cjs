// `npm install` on a Node.js older than `engines.node` says so in one clear paragraph instead of
// leaving a newcomer with a screenful of EBADENGINE warnings. It does not stop the install: the
// devDependency `node` brings Node.js 22, and every npm script (npm start, npm test, npx) runs on it.
const { engines } = require('../../package.json');
const required = Number(/\d+/.exec(engines.node)[0]);
// npm's own Node (from its user agent): npm scripts may already run on the Node 22 of node_modules/.bin.
const found = /node\/v([\d.]+)/.exec(process.env.npm_config_user_agent ?? '')?.[1] ?? process.versions.node;
if (Number(found.split('.')[0]) < required) {
  process.stderr.write(
    `\nThis project needs Node.js ${required} or later (package.json "engines"); this npm runs on ${found}.\n` +
      `The install goes on: it adds Node.js ${required} as a development dependency, and npm start, npm test\n` +
      `and npx run on that one. The EBADENGINE warnings npm prints are about this older Node and harmless.\n` +
      `To be rid of them, install Node.js ${required} (e.g. \`nvm install ${required}\`) and check with \`node --version\`.\n\n`,
  );
}
