// An esbuild plugin (infra/bundle/esbuild-plugins.cjs) that makes V8 compile the bodies of the
// bundled CommonJS modules once instead of twice.
//
// esbuild wraps each CommonJS module (and each ES module that is `require`d) of a bundle in a
// function, `var require_x = __commonJS((exports, module) => { ...the module... })`, called the
// first time the module is required. V8 compiles a function lazily: when the chunk loads it only
// pre-parses the function (to find where it ends), and parses it again, fully, when it is first
// called. The SQL Server driver requires nearly all of its ~130 modules as soon as it loads, so
// every first database call parsed them twice (~20 % of loading the driver chunk).
// V8 compiles at once a function expression written in parentheses, `(function (...) {...})`
// (the "PIFE" heuristic, meant for immediately invoked functions): after esbuild has written the
// chunks, this rewrites the argument of each such wrapper call from `(exports, module) => {...}`
// to `(function (exports, module) {...})`. Only arrow functions whose body uses no `this`,
// `arguments`, `new.target` or `super` are rewritten (there an arrow and a function behave alike),
// and only as the argument of esbuild's own wrappers (`__commonJS`, `__esm`: recognised by their
// shape, `(a, b) => () => ...`, where they are defined). The source maps are shifted to match.

const fs = require('node:fs');
const path = require('node:path');
const acorn = require('acorn');

const parse = (source) => acorn.parse(source, { ecmaVersion: 'latest', sourceType: 'module' });

/** Calls `visit` on every node under `node` (children first-level objects and arrays). */
function walk(node, visit) {
  if (!node || typeof node.type !== 'string') return;
  if (visit(node) === false) return;
  for (const key of Object.keys(node)) {
    const value = node[key];
    if (Array.isArray(value)) for (const child of value) walk(child, visit);
    else if (value && typeof value === 'object' && typeof value.type === 'string') walk(value, visit);
  }
}

/** Whether an arrow function's body refers to what an arrow and a function bind differently. */
function usesOwnBindings(arrow) {
  let uses = false;
  const visit = (node) => {
    if (uses) return false;
    // A nested function (not an arrow), a method, a class field's value and a static block have
    // their own `this` and `arguments`; a computed key of a class member has not.
    if (
      node.type === 'FunctionExpression' ||
      node.type === 'FunctionDeclaration' ||
      node.type === 'StaticBlock'
    ) {
      return false;
    }
    if (node.type === 'MethodDefinition' || node.type === 'PropertyDefinition') {
      if (node.computed) walk(node.key, visit);
      return false;
    }
    if (
      node.type === 'ThisExpression' ||
      node.type === 'Super' ||
      node.type === 'MetaProperty' ||
      (node.type === 'Identifier' && node.name === 'arguments')
    ) {
      uses = true;
      return false;
    }
    return true;
  };
  walk(arrow.body, visit);
  return uses;
}

/** Top-level `var name = (a, b) => () => ...` of a chunk: esbuild's lazy module wrappers. */
function wrapperHelpers(ast) {
  const helpers = new Set();
  for (const statement of ast.body) {
    if (statement.type !== 'VariableDeclaration') continue;
    for (const declarator of statement.declarations) {
      const init = declarator.init;
      if (
        declarator.id.type === 'Identifier' &&
        init?.type === 'ArrowFunctionExpression' &&
        init.params.length >= 2 &&
        init.body.type === 'ArrowFunctionExpression' &&
        init.body.params.length === 0
      ) {
        helpers.add(declarator.id.name);
      }
    }
  }
  return helpers;
}

/** Exported name → local name of a chunk's `export { local as exported }`. */
function exportedLocals(ast) {
  const exports = new Map();
  for (const statement of ast.body) {
    if (statement.type !== 'ExportNamedDeclaration' || statement.source) continue;
    for (const specifier of statement.specifiers) exports.set(specifier.exported.name, specifier.local.name);
  }
  return exports;
}

/** Base64 VLQ of source maps. */
const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const B64_INDEX = new Map([...B64].map((c, i) => [c, i]));
function decodeVlq(text) {
  const values = [];
  let value = 0;
  let shift = 0;
  for (const char of text) {
    const digit = B64_INDEX.get(char);
    if (digit === undefined) throw new Error(`bad source map character ${char}`);
    value += (digit & 31) << shift;
    if (digit & 32) shift += 5;
    else {
      values.push(value & 1 ? -(value >>> 1) : value >>> 1);
      value = 0;
      shift = 0;
    }
  }
  return values;
}
function encodeVlq(values) {
  let text = '';
  for (const v of values) {
    let value = v < 0 ? (-v << 1) | 1 : v << 1;
    do {
      let digit = value & 31;
      value >>>= 5;
      if (value) digit |= 32;
      text += B64[digit];
    } while (value);
  }
  return text;
}

/** `mappings` with generated columns moved right by the insertions (line → [[column, length]...]). */
function shiftMappings(mappings, insertions) {
  return mappings
    .split(';')
    .map((line, index) => {
      const inserted = insertions.get(index);
      if (!inserted || !line) return line;
      let column = 0;
      let shiftedPrevious = 0;
      return line
        .split(',')
        .map((segment) => {
          const fields = decodeVlq(segment);
          column += fields[0];
          let shifted = column;
          for (const [at, length] of inserted) if (column >= at) shifted += length;
          fields[0] = shifted - shiftedPrevious;
          shiftedPrevious = shifted;
          return encodeVlq(fields);
        })
        .join(',');
    })
    .join(';');
}

/** Line (0-based) and column of each offset of `text`. */
function lineColumns(text) {
  const starts = [0];
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 10) starts.push(i + 1);
  return (offset) => {
    let low = 0;
    let high = starts.length - 1;
    while (low < high) {
      const mid = (low + high + 1) >> 1;
      if (starts[mid] <= offset) low = mid;
      else high = mid - 1;
    }
    return [low, offset - starts[low]];
  };
}

/**
 * Rewrites one chunk; answers how many wrappers it made eager. `helpersOf(specifier)` gives the
 * wrapper helpers a chunk it imports from exports.
 */
function rewriteChunk(file, helpersOf) {
  const source = fs.readFileSync(file, 'utf8');
  const ast = parse(source);
  const wrappers = wrapperHelpers(ast);
  for (const statement of ast.body) {
    if (statement.type !== 'ImportDeclaration' || !statement.source.value.startsWith('.')) continue;
    const exported = helpersOf(path.resolve(path.dirname(file), statement.source.value));
    for (const specifier of statement.specifiers) {
      if (specifier.type === 'ImportSpecifier' && exported.has(specifier.imported.name)) {
        wrappers.add(specifier.local.name);
      }
    }
  }
  if (wrappers.size === 0) return 0;
  /** [offset, text to insert, characters replaced] */
  const edits = [];
  for (const statement of ast.body) {
    if (statement.type !== 'VariableDeclaration') continue;
    for (const { init } of statement.declarations) {
      if (
        init?.type !== 'CallExpression' ||
        init.callee.type !== 'Identifier' ||
        !wrappers.has(init.callee.name) ||
        init.arguments.length !== 1
      ) {
        continue;
      }
      const arrow = init.arguments[0];
      if (
        arrow.type !== 'ArrowFunctionExpression' ||
        arrow.async ||
        arrow.body.type !== 'BlockStatement' ||
        !arrow.params.every((param) => param.type === 'Identifier') ||
        usesOwnBindings(arrow)
      ) {
        continue;
      }
      const head = source.slice(arrow.start, arrow.body.start);
      const arrowAt = head.lastIndexOf('=>');
      if (arrowAt < 0) continue;
      // `(a, b) => {...}` becomes `(function(a, b)   {...})`; a lone parameter esbuild wrote
      // without parentheses, `a => {...}`, becomes `(function(a)  {...})`.
      const parenthesized = source[arrow.start] === '(';
      edits.push([arrow.start, parenthesized ? '(function' : '(function(', 0]);
      edits.push([arrow.start + arrowAt, parenthesized ? '  ' : ') ', 2]);
      edits.push([arrow.end, ')', 0]);
    }
  }
  if (edits.length === 0) return 0;
  const position = lineColumns(source);
  /** line → [[column, inserted length]] */
  const insertions = new Map();
  for (const [offset, text, replaced] of edits) {
    if (text.length === replaced) continue;
    const [line, column] = position(offset);
    if (!insertions.has(line)) insertions.set(line, []);
    insertions.get(line).push([column, text.length - replaced]);
  }
  let rewritten = source;
  for (const [offset, text, replaced] of [...edits].sort((a, b) => b[0] - a[0])) {
    rewritten = rewritten.slice(0, offset) + text + rewritten.slice(offset + replaced);
  }
  parse(rewritten); // still JavaScript, or the build fails here
  fs.writeFileSync(file, rewritten);
  const mapFile = `${file}.map`;
  if (fs.existsSync(mapFile)) {
    const map = JSON.parse(fs.readFileSync(mapFile, 'utf8'));
    map.mappings = shiftMappings(map.mappings, insertions);
    fs.writeFileSync(mapFile, JSON.stringify(map));
  }
  return edits.length / 3;
}

/** @type {import('esbuild').Plugin} */
const eagerModuleBodies = {
  name: 'eager-module-bodies',
  setup(build) {
    const options = build.initialOptions;
    if (options.write === false) return;
    options.metafile = true;
    build.onEnd((result) => {
      if (result.errors.length || !result.metafile) return;
      const cwd = options.absWorkingDir ?? process.cwd();
      const chunks = Object.keys(result.metafile.outputs)
        .filter((output) => /\.m?js$/.test(output))
        .map((output) => path.resolve(cwd, output));
      const helpers = new Map();
      const helpersOf = (file) => {
        if (!helpers.has(file)) {
          const ast = parse(fs.readFileSync(file, 'utf8'));
          const locals = wrapperHelpers(ast);
          helpers.set(
            file,
            new Set(
              [...exportedLocals(ast)].filter(([, local]) => locals.has(local)).map(([exported]) => exported),
            ),
          );
        }
        return helpers.get(file);
      };
      // Every chunk's helpers first: rewriting a chunk must not change what its importers see.
      for (const chunk of chunks) helpersOf(chunk);
      for (const chunk of chunks) rewriteChunk(chunk, (file) => helpers.get(file) ?? helpersOf(file));
    });
  },
};

module.exports = { eagerModuleBodies, shiftMappings, decodeVlq, encodeVlq };
