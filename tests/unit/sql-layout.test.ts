import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CONVERT_FORMATS } from '../../shared/adapters/embedded/condition.js';
import { CONVERT_STYLES } from '../../shared/core/condition/vocabulary.js';

/**
 * Each dialect's SQL lives in its adapter (`shared/adapters/mssql`, `shared/adapters/embedded`):
 * `shared/core` and what the adapters share (`shared/adapters/sql-common`) hold no SQL text.
 */
const NO_SQL_FOLDERS = ['shared/core', 'shared/adapters/sql-common'];

// Statements in capitals (how both dialects are written here), or in lower case with their next word.
const SQL_TEXT: readonly (readonly [string, RegExp])[] = [
  ['a SELECT', /\bSELECT\b|\bselect\b[^\n]*\bfrom\b/],
  ['an INSERT', /\bINSERT\b|\binsert\s+into\b/],
  ['an UPDATE', /\bUPDATE\b|\bupdate\s+[\w."[\]]+\s+set\b/],
  ['a DELETE', /\bDELETE\b|\bdelete\s+from\b/],
  ['an EXEC', /\bEXEC(?:UTE)?\b|\bexec\s+[\w"[]/],
  ['a MERGE', /\bMERGE\b|\bmerge\s+into\b/],
  [
    'a CREATE',
    /\bCREATE\b|\bcreate\s+(?:or\s+\w+\s+)?(?:table|procedure|proc|view|function|index|trigger)\b/,
  ],
  ['a CALL', /\bCALL\s+[\w"[]|\bcall\s+\w+\.\w+\(/],
  ['a T-SQL placeholder', /@p\d/],
  ['a PostgreSQL placeholder', /\$\d/],
  ['bracket identifier quoting', /\[\w+\]\.\[|\bAS \[\w+\]|\bdbo\.\[|']]'/i],
  ['double-quote identifier quoting', /"\w+"\."|\bAS "\w+"|\bdbo\."|'""'/i],
];

/**
 * The only places the patterns may match: the reserved words the condition parser refuses, and
 * its refusal of subqueries. Each entry is a file and the exact text allowed there.
 */
const ALLOWED: Readonly<Record<string, (text: string) => string>> = {
  'shared/core/condition/vocabulary.ts': (text) =>
    text.replace(/export const RESERVED_WORDS[^`]*`[^`]*`/, 'RESERVED_WORDS'),
  'shared/core/condition/parser.ts': (text) =>
    text
      .replaceAll("this.isWord(this.peek(), 'SELECT')", '')
      .replaceAll("word === 'SELECT'", '')
      .replaceAll("'Subqueries (SELECT) are not allowed'", ''),
  // Regular-expression replacements that split camelCase words, not placeholders.
  'shared/core/web-api/names.ts': (text) => text.replaceAll("'$1_$2'", ''),
  // The name of the permission a user is told to grant, not a statement.
  'shared/core/files/set-file.ts': (text) =>
    text.replaceAll("(grant EXECUTE on it to the service's role)", ''),
};

function sourceFiles(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => join(entry.parentPath, entry.name));
}

/** `what (file:line)` for every match of SQL text in `text`. */
function findSql(file: string, text: string): string[] {
  const found: string[] = [];
  text.split('\n').forEach((line, index) => {
    for (const [what, pattern] of SQL_TEXT) {
      if (pattern.test(line)) found.push(`${what} (${file}:${index + 1}: ${line.trim().slice(0, 80)})`);
    }
  });
  return found;
}

describe('Where the SQL lives', () => {
  it('no file of shared/core or shared/adapters/sql-common holds SQL text of either dialect', () => {
    const files = NO_SQL_FOLDERS.flatMap(sourceFiles);
    expect(files.length).toBeGreaterThan(40);
    const found = files.flatMap((file) => {
      const allow = ALLOWED[file] ?? ((text: string) => text);
      return findSql(file, allow(readFileSync(file, 'utf8')));
    });
    expect(found).toEqual([]);
  });

  it('the allowances still match what they allow (a stale one would hide nothing and should go)', () => {
    for (const [file, allow] of Object.entries(ALLOWED)) {
      const text = readFileSync(file, 'utf8');
      expect(findSql(file, text).length, file).toBeGreaterThan(0);
      expect(allow(text), file).not.toBe(text);
    }
  });

  it('recognises each style the SQL used to take inside the core', () => {
    // One sample a line, as source text: backticks and dollar signs escaped for the template.
    const samples = String.raw`
findApplication: \`SELECT ID AS id FROM dbo.WS_APPLICATION WHERE API_KEY = @p1\`,
sweepReplayGuard: \`DELETE FROM dbo."WS_REPLAY_GUARD" WHERE "EXPIRES_AT" < now()\`,
openJournal: \`INSERT INTO dbo.WS_JOURNAL (APPLICATION_ID) OUTPUT inserted.ID VALUES (@p1)\`,
releaseJob: \`UPDATE dbo.WS_JOURNAL SET LEASE_UNTIL = NULL WHERE ID = @p1\`,
const statement = \`EXEC \${target} @params = @p1\`;
call: (procedure) => \`CALL \${procedure}(CAST($1 AS uuid))\`,
const count = dialect === 'mssql' ? 'COUNT_BIG(*)' : 'count(*)'; const sql = \`select \${count} from t\`;
const table = \`\${q('dbo')}.\${q('SVCDOC')}\`; const byGuid = \`\${q('FILEGUID')} = \${p(1)}\`; // [dbo].[SVCDOC]
quoteIdent: (name: string) => \`[\${name.replaceAll(']', ']]')}]\`,
quoteIdent: (name: string) => \`"\${name.replaceAll('"', '""')}"\`,
param: (index: number) => \`$\${index}\`, // $1
findProcedure: \`SELECT n.nspname AS "schema" FROM pg_catalog.pg_proc AS p\`,
CREATE OR ALTER PROCEDURE dbo.SVC_X AS BEGIN SET NOCOUNT ON; END
MERGE dbo.T AS t USING (VALUES (1)) AS s (ID) ON t.ID = s.ID`
      .trim()
      .split('\n')
      .map((line) => line.replaceAll('\\`', '`').replaceAll('\\$', '$'));
    expect(samples).toHaveLength(14);
    for (const sample of samples) expect(findSql('sample', sample), sample).not.toEqual([]);
    expect(
      findSql('sample', '/** Looks a table or view up in the catalogue; a parameter per value. */'),
    ).toEqual([]);
  });

  it('the embedded adapter writes every CONVERT style the language accepts', () => {
    expect([...CONVERT_FORMATS.keys()]).toEqual([...CONVERT_STYLES]);
  });
});

describe('The SQL scripts of both dialects', () => {
  const scripts = (folder: string) => readdirSync(folder).filter((name) => name.endsWith('.sql'));

  it('are numbered alike: a number is one capability, under the same name in each dialect', () => {
    // SQL Server keeps the demo's scripts (the ERP's schema and data, the demo's procedures) apart
    // from the service's, which db:apply runs on a tenant's database; the embedded database is
    // always the demo's, in one folder.
    const mssql = [...scripts('infra/sql/mssql/demo'), ...scripts('infra/sql/mssql/service')].sort();
    const embedded = scripts('infra/sql/embedded').sort();
    expect(embedded).toEqual(mssql);
    const numbers = embedded.map((name) => name.slice(0, name.indexOf('-')));
    expect(new Set(numbers).size, 'each number once').toBe(numbers.length);
  });
});
