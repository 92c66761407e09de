/**
 * The database permissions the service's login needs on SQL Server (CONTRACT.md section 7; the
 * ERP's own rule: SERVICE-SPEC.md section 4.1, rule 5). One list for three readers: `npm run
 * db:apply -- … --role` grants it, a permission error names what of it is missing, and
 * docs/sql-server.md ("Permissions") prints it (a unit test holds the two together).
 */

export type Permission = 'SELECT' | 'INSERT' | 'UPDATE' | 'DELETE' | 'EXECUTE';

/** One permission on one of the service's own objects (infra/sql/mssql/service/*.sql). */
export interface ServiceGrant {
  /** Schema and name, as the scripts create it. */
  readonly object: string;
  readonly permission: Permission;
  /** What of the service uses it. */
  readonly usedBy: string;
  /** What a caller (or the operator) sees without it. */
  readonly without: string;
}

const DENIED = '500 `database_permission_denied`';
const WEB_DENIED = '500, `errorCode` 180';

/** The service's own tables: every grant `db:apply --role` gives, whatever the tenant serves. */
export const SERVICE_GRANTS: readonly ServiceGrant[] = [
  { object: 'dbo.SVCDOC', permission: 'SELECT', usedBy: '`getFile`', without: `\`getFile\`: ${DENIED}` },
  {
    object: 'dbo.SVCDOC',
    permission: 'INSERT',
    usedBy: '`setFile`',
    without: `\`setFile\`: ${DENIED}, nothing stored`,
  },
  {
    object: 'dbo.WS_OPERATION',
    permission: 'SELECT',
    usedBy: '`getData`, `getDataAsync` (`vltyp` → procedure)',
    without: `\`getData\`, \`getDataAsync\`: ${WEB_DENIED}`,
  },
  {
    object: 'dbo.WS_REPLAY_GUARD',
    permission: 'SELECT',
    usedBy: '`getData`, `getDataAsync` (a signed request is taken once)',
    without: `\`getData\`, \`getDataAsync\`: ${WEB_DENIED}`,
  },
  {
    object: 'dbo.WS_REPLAY_GUARD',
    permission: 'INSERT',
    usedBy: '`getData`, `getDataAsync`',
    without: `\`getData\`, \`getDataAsync\`: ${WEB_DENIED}`,
  },
  {
    object: 'dbo.WS_REPLAY_GUARD',
    permission: 'UPDATE',
    usedBy: '`getData`, `getDataAsync` (an expired claim is taken over)',
    without: `\`getData\`, \`getDataAsync\`: ${WEB_DENIED}`,
  },
  {
    object: 'dbo.WS_REPLAY_GUARD',
    permission: 'DELETE',
    usedBy: 'removing expired claims, beside the calls',
    without: 'calls are answered; expired claims stay in the table (it grows)',
  },
  {
    object: 'dbo.WS_JOURNAL',
    permission: 'SELECT',
    usedBy: 'the journal: `getData`, `getDataAsync`, 997, the asynchronous jobs',
    without: `\`getData\`, \`getDataAsync\`, 997: ${WEB_DENIED}`,
  },
  {
    object: 'dbo.WS_JOURNAL',
    permission: 'INSERT',
    usedBy: '`getData`, `getDataAsync` (every accepted call is journaled)',
    without: `\`getData\`, \`getDataAsync\`: ${WEB_DENIED}`,
  },
  {
    object: 'dbo.WS_JOURNAL',
    permission: 'UPDATE',
    usedBy: "`getData` (the call's outcome), the asynchronous jobs",
    without: `\`getData\`: ${WEB_DENIED}; a job is given up (997 then answers 170)`,
  },
  {
    object: 'dbo.SVC_JOURNAL',
    permission: 'SELECT',
    usedBy: 'whose call a journal row is: 997, `getDataAsync` waiting for its job',
    without: `997, \`getDataAsync\`: ${WEB_DENIED}`,
  },
  {
    object: 'dbo.SVC_JOURNAL',
    permission: 'INSERT',
    usedBy: '`getData`, `getDataAsync` (every journaled call, with its journal row)',
    without: `\`getData\`, \`getDataAsync\`: ${WEB_DENIED}, nothing journaled`,
  },
  {
    object: 'dbo.SUBJECT',
    permission: 'SELECT',
    usedBy: "webhooks (the subject's `WEBHOOK_URL`, `SECRET_WEBHOOK`), the webhook admin function",
    without:
      'no webhook is sent (each attempt fails, is retried, then dead-lettered); the admin function answers `database_permission_denied`',
  },
  {
    object: 'dbo.WEBHOOK_ENDPOINT',
    permission: 'SELECT',
    usedBy: "webhooks (the endpoint's state, the secrets under rotation), the admin function",
    without: 'as for `dbo.SUBJECT`',
  },
  {
    object: 'dbo.WEBHOOK_ENDPOINT',
    permission: 'INSERT',
    usedBy: "webhooks (a subject's first event)",
    without: 'as for `dbo.SUBJECT`, for a subject with no endpoint row yet',
  },
  {
    object: 'dbo.WEBHOOK_ENDPOINT',
    permission: 'UPDATE',
    usedBy: 'webhooks (failing, disabled, a new secret), the admin function (`enable`)',
    without:
      'as for `dbo.SUBJECT`, once an endpoint changes state; `enable` answers `database_permission_denied`',
  },
  {
    object: 'dbo.WEBHOOK_DELIVERY',
    permission: 'SELECT',
    usedBy: 'webhooks (an event is delivered once), the admin function',
    without: 'as for `dbo.SUBJECT`',
  },
  {
    object: 'dbo.WEBHOOK_DELIVERY',
    permission: 'INSERT',
    usedBy: 'webhooks (every attempt is logged), the admin function (`recover`)',
    without:
      'webhooks are sent but their attempts not recorded (a copy the queue hands out again is sent again; `status` does not show them); each attempt logs `database permission denied`',
  },
  {
    object: 'dbo.SVC_CHANGE_FEED',
    permission: 'SELECT',
    usedBy: 'the change feed (`getChanges`), its retention',
    without: `\`getChanges\`: ${DENIED}`,
  },
  {
    object: 'dbo.SVC_CHANGE_FEED',
    permission: 'UPDATE',
    usedBy: 'the change feed (a page stamps the batches it serves), its retention',
    without: `\`getChanges\`: ${DENIED} once there are changes to stamp`,
  },
  {
    object: 'dbo.SVC_SUBSCRIPTION',
    permission: 'SELECT',
    usedBy: 'change notifications: the subscription routes, the notifier, their delivery',
    without: `the subscription routes: ${DENIED}; no notification is sent (the notifier logs \`database permission denied\`)`,
  },
  {
    object: 'dbo.SVC_SUBSCRIPTION',
    permission: 'INSERT',
    usedBy: 'creating a subscription',
    without: `creating a subscription: ${DENIED}`,
  },
  {
    object: 'dbo.SVC_SUBSCRIPTION',
    permission: 'UPDATE',
    usedBy: "the notifier (what it saw and sent), delivery (a subscription's state), rotate, enable",
    without: 'as for `SELECT` once a table changes or an event is delivered',
  },
  {
    object: 'dbo.SVC_SUBSCRIPTION',
    permission: 'DELETE',
    usedBy: 'deleting a subscription',
    without: `deleting a subscription: ${DENIED}`,
  },
  {
    object: 'dbo.SVC_NOTIFICATION_DELIVERY',
    permission: 'SELECT',
    usedBy: "change notifications' delivery (attempts of a message)",
    without: 'no notification is delivered (each attempt fails, is retried, then dead-lettered)',
  },
  {
    object: 'dbo.SVC_NOTIFICATION_DELIVERY',
    permission: 'INSERT',
    usedBy: "change notifications' delivery (every attempt is recorded)",
    without:
      'notifications are sent but their attempts not recorded: the message comes back and is sent again; each attempt logs `database permission denied`',
  },
  {
    object: 'dbo.SVC_NOTIFIER_STATE',
    permission: 'SELECT',
    usedBy: "the subscription routes and the notifier (the tenant's loop of passes)",
    without: `creating a subscription: ${DENIED}; no pass runs`,
  },
  {
    object: 'dbo.SVC_NOTIFIER_STATE',
    permission: 'INSERT',
    usedBy: "a tenant's first subscription",
    without: 'as for `SELECT`',
  },
  {
    object: 'dbo.SVC_NOTIFIER_STATE',
    permission: 'UPDATE',
    usedBy: 'the notifier (each pass), creating a subscription',
    without: 'as for `SELECT`',
  },
  {
    object: 'dbo.SVC_WEBHOOK_SENDING',
    permission: 'SELECT',
    usedBy: 'webhooks (the claim to send an event: two copies at once send it once)',
    without: 'as for `dbo.SUBJECT`',
  },
  {
    object: 'dbo.SVC_WEBHOOK_SENDING',
    permission: 'INSERT',
    usedBy: "webhooks (an event's first claim)",
    without: 'as for `dbo.SUBJECT`',
  },
  {
    object: 'dbo.SVC_WEBHOOK_SENDING',
    permission: 'UPDATE',
    usedBy: 'webhooks (a claim taken over once it lapsed, or renewed by its copy)',
    without: 'as for `dbo.SUBJECT`',
  },
  {
    object: 'dbo.SVC_WEBHOOK_SENDING',
    permission: 'DELETE',
    usedBy: 'webhooks (a claim released after its attempt)',
    without:
      'webhooks are sent and recorded, but each claim stays until it lapses (about 30 s): another copy of the event waits that long; each attempt logs `database permission denied`',
  },
  {
    object: 'dbo.SVC_IDEMPOTENCY',
    permission: 'SELECT',
    usedBy:
      "a call with an `Idempotency-Key` (`getData`, `getDataAsync`, `setFile`, creating a subscription): the key's record",
    without: `such a call of \`getData\`, \`getDataAsync\`: ${WEB_DENIED}; of \`setFile\`, creating a subscription: ${DENIED}; calls without a key are answered`,
  },
  {
    object: 'dbo.SVC_IDEMPOTENCY',
    permission: 'INSERT',
    usedBy: "a call with an `Idempotency-Key`: its answer, recorded in the transaction of the call's effects",
    without: "as for `SELECT`; the call's effects roll back with the record",
  },
  {
    object: 'dbo.SVC_IDEMPOTENCY',
    permission: 'DELETE',
    usedBy:
      'a call with an `Idempotency-Key` (its record replaces an expired one of the key), removing expired keys (the scheduled clean-up, `changeFeedRetention`)',
    without:
      'as for `SELECT`; expired keys stay in the table (it grows), and the clean-up fails, its log naming the table',
  },
];

/**
 * The ERP's register of Web API applications, read only where a tenant's registry names it
 * instead of listing its applications (`webApi.applications.erpTable`); `--erp-applications`.
 */
export const ERP_APPLICATIONS_GRANT: ServiceGrant = {
  object: 'dbo.WS_APPLICATION',
  permission: 'SELECT',
  usedBy:
    "every Web API call of a tenant whose registry names the ERP's register (`webApi.applications.erpTable`; `--erp-applications`)",
  without: `every Web API call of such a tenant: ${WEB_DENIED}`,
};

/** Grants on objects the tenant chooses: one row each in docs/sql-server.md, granted by options. */
export const TENANT_GRANTS: readonly ServiceGrant[] = [
  ERP_APPLICATIONS_GRANT,
  {
    object: 'each table or view served (`--read`)',
    permission: 'SELECT',
    usedBy: 'the Data API, the per-tenant description, the change feed of that table',
    without: '404 `data_source_not_found`, as for an unknown name; not in the description',
  },
  {
    object: 'the change table of each table recorded (`dbo.SVC_CHANGES_<table>`, found by `--role`)',
    permission: 'SELECT',
    usedBy: 'the change feed',
    without: `\`getChanges\` of that table: ${DENIED}`,
  },
  {
    object: 'the change table of each table recorded',
    permission: 'UPDATE',
    usedBy: 'the change feed (a page stamps the batches it serves)',
    without: `\`getChanges\` of that table: ${DENIED} once there are changes to stamp`,
  },
  {
    object: 'the change table of each table recorded',
    permission: 'DELETE',
    usedBy: "the change feed's retention",
    without: 'old changes stay; the retention function logs `database permission denied`',
  },
  {
    object: "each Web API operation's procedure (`dbo.WS_OPERATION`, found by `--role`)",
    permission: 'EXECUTE',
    usedBy: '`getData`, `getDataAsync` of that `vltyp`',
    without: `that \`vltyp\`: ${WEB_DENIED}`,
  },
  {
    object: 'each `setFile` procedure (`--execute`)',
    permission: 'EXECUTE',
    usedBy: '`setFile?userDBProcedure=`',
    without:
      "502 `procedure_failed` with the stored file's `fileGUID` (SQL Server hides a procedure the login may not execute); on the T-SQL engine 500 `database_permission_denied`",
  },
];

const CHANGE_TABLE = /^SVC_CHANGES_/i;

/** The bare, unquoted name of `schema.name` or `name`, for matching what a server names. */
const bareName = (object: string) =>
  object
    .replace(/[[\]"]/g, '')
    .split('.')
    .pop()!
    .toLowerCase();

/**
 * What to grant on an object a statement was refused on: the permission the server named (SQL
 * Server does), else every permission the list gives that object (the T-SQL engine names only the
 * object), else by its kind. `object` as the server named it, with or without its schema, in any
 * case; answered with the list's spelling where the list has it.
 */
export function missingGrant(
  object: string,
  kind: string | undefined,
  permission: string | undefined,
): { object: string; grant: string } {
  const name = bareName(object);
  const listed = [...SERVICE_GRANTS, ERP_APPLICATIONS_GRANT].filter((g) => bareName(g.object) === name);
  const spelled = listed[0]?.object ?? object;
  if (permission) return { object: spelled, grant: permission.toUpperCase() };
  if (listed.length) return { object: spelled, grant: listed.map((g) => g.permission).join(', ') };
  if (CHANGE_TABLE.test(name)) return { object, grant: 'SELECT, UPDATE, DELETE' };
  if (kind === 'procedure' || kind === 'function') return { object, grant: 'EXECUTE' };
  return { object, grant: 'what the statement needs (SELECT, INSERT, UPDATE or DELETE)' };
}
