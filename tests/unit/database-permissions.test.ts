import { readFileSync } from 'node:fs';
import sql from 'mssql';
import { describe, expect, it } from 'vitest';
import { mapError } from '../../shared/adapters/mssql/connection.js';
import { BABELFISH_UNTRANSLATED } from '../../shared/adapters/mssql/dialect.js';
import { SERVICE_GRANTS, TENANT_GRANTS } from '../../shared/adapters/mssql/service-grants.js';
import { DatabasePermissionError, DatabaseStatementError } from '../../shared/core/database.js';
import { renderDataApiError } from '../../shared/lambda/data-api.js';
import { renderWebApiError } from '../../shared/lambda/web-api/http.js';

/** A driver error as mssql raises it for a refused statement. */
const refused = (number: number, message: string) =>
  Object.assign(new sql.RequestError(message, 'EREQUEST'), { number });

describe('a permission the login lacks (CONTRACT.md section 7)', () => {
  it("maps SQL Server's 229 and 230 to the object and the permission they name", () => {
    const object = mapError(
      refused(229, "The SELECT permission was denied on the object 'SVCDOC', database 'erp', schema 'dbo'."),
    );
    expect(object).toBeInstanceOf(DatabasePermissionError);
    expect(object).toMatchObject({ object: 'dbo.SVCDOC', grant: 'SELECT', dbCode: '229' });
    const column = mapError(
      refused(
        230,
        "The SELECT permission was denied on the column 'SECRET' of the object 'WEBHOOK_ENDPOINT', database 'erp', schema 'dbo'.",
      ),
    );
    expect(column).toMatchObject({ object: 'dbo.WEBHOOK_ENDPOINT', grant: 'SELECT' });
    const procedure = mapError(
      refused(
        229,
        "The EXECUTE permission was denied on the object 'WS_OP_X', database 'erp', schema 'erp'.",
      ),
    );
    expect(procedure).toMatchObject({ object: 'erp.WS_OP_X', grant: 'EXECUTE' });
  });

  it("maps the T-SQL engine's passed-through text to the object, with every grant the list gives it", () => {
    expect(mapError(refused(BABELFISH_UNTRANSLATED, 'permission denied for table svcdoc'))).toMatchObject({
      object: 'dbo.SVCDOC',
      grant: 'SELECT, INSERT',
    });
    expect(
      mapError(refused(BABELFISH_UNTRANSLATED, 'permission denied for table ws_replay_guard')),
    ).toMatchObject({ object: 'dbo.WS_REPLAY_GUARD', grant: 'SELECT, INSERT, UPDATE, DELETE' });
    expect(
      mapError(refused(BABELFISH_UNTRANSLATED, 'permission denied for procedure ws_op_subject_search')),
    ).toMatchObject({ object: 'ws_op_subject_search', grant: 'EXECUTE' });
    expect(
      mapError(refused(BABELFISH_UNTRANSLATED, 'permission denied for table svc_changes_subject')),
    ).toMatchObject({ object: 'svc_changes_subject', grant: 'SELECT, UPDATE, DELETE' });
  });

  it('leaves every other refusal a statement error', () => {
    expect(mapError(refused(2627, 'Violation of PRIMARY KEY constraint'))).toBeInstanceOf(
      DatabaseStatementError,
    );
    expect(mapError(refused(BABELFISH_UNTRANSLATED, 'permission denied to create role'))).toBeInstanceOf(
      DatabaseStatementError,
    );
  });

  it("answers 500 database_permission_denied with the service's words, never the engine's", () => {
    const error = mapError(refused(BABELFISH_UNTRANSLATED, 'permission denied for table svcdoc'));
    const { response, code } = renderDataApiError(error, undefined, 'request-1');
    expect([response.status, code]).toEqual([500, 'database_permission_denied']);
    const body = JSON.parse(String(response.body)) as { error: { message: string; requestId: string } };
    expect(body.error.message).toBe(
      `The service's database login may not use dbo.SVCDOC: grant SELECT, INSERT on dbo.SVCDOC to the service's role (docs/sql-server.md, "Permissions")`,
    );
    expect(body.error.requestId).toBe('request-1');
  });

  it('answers the Web API 500 with errorCode 180 and the same words', () => {
    const error = mapError(refused(BABELFISH_UNTRANSLATED, 'permission denied for table ws_application'));
    const { response, code } = renderWebApiError(error, undefined, 'request-2');
    expect([response.status, code]).toEqual([500, '180']);
    expect(JSON.parse(String(response.body))).toEqual({
      id: null,
      vlResult: -1,
      data: [
        {
          error: [
            {
              errorCode: '180',
              errorMessage: `The service's database login may not use dbo.WS_APPLICATION: grant SELECT on dbo.WS_APPLICATION to the service's role (docs/sql-server.md, "Permissions")`,
            },
          ],
        },
      ],
    });
  });
});

describe('docs/sql-server.md, "Permissions"', () => {
  it('lists exactly the grants the role is given and the answers without each (the list the tests use)', () => {
    const text = readFileSync('docs/sql-server.md', 'utf8');
    const section = text.slice(text.indexOf('\n## Permissions'));
    const end = section.indexOf('\n## ', 5);
    const rows = (end > 0 ? section.slice(0, end) : section)
      .split('\n')
      .filter((line) => line.startsWith('| ') && !line.startsWith('| object') && !line.startsWith('|---'))
      .map((line) =>
        line
          .slice(2, -2)
          .split(' | ')
          .map((cell) => cell.trim()),
      );
    const expected = [...SERVICE_GRANTS, ...TENANT_GRANTS].map((grant) => [
      grant.object.startsWith('dbo.') ? `\`${grant.object}\`` : grant.object,
      grant.permission,
      grant.usedBy,
      grant.without,
    ]);
    expect(rows).toEqual(expected);
  });
});
