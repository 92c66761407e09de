// Serverless plugin: checks the deploy parameters (`--param="name=value"`, serverless.yml `params`)
// before anything is built or sent to AWS, so a wrong value is named at once instead of failing
// half-way through a CloudFormation deploy (or worse, deploying functions that cannot start).
//
// - At every packaging (`npm run package`, and the packaging a deploy starts with): each value
//   given has the shape its use needs (a secret *name*, not an ARN, because the IAM grant appends
//   Secrets Manager's `-??????`; an SSM path from `/`; ARNs of the right service; whole numbers).
// - At deploy: the VPC values are there. Packaging alone may leave them empty (the template is
//   checked offline); a deploy without them would create functions that cannot reach a database.

'use strict';

const LIST = (item) => new RegExp(`^${item}(,${item})*$`);

/** name → [test of a non-empty value, what it must be]. */
const SHAPES = {
  vpcSubnetIds: [LIST('subnet-[0-9a-f]{8,17}'), 'comma-separated subnet ids (subnet-0123abcd,…)'],
  vpcSecurityGroupIds: [LIST('sg-[0-9a-f]{8,17}'), 'comma-separated security group ids (sg-0123abcd,…)'],
  alarmTopicArn: [
    /^arn:aws[a-z-]*:sns:[a-z0-9-]+:[0-9]{12}:[A-Za-z0-9_-]{1,256}$/,
    'the ARN of an SNS topic',
  ],
  tenantRegistrySecretId: [
    /^(?!arn:)[A-Za-z0-9/_+=.@-]{1,512}$/,
    'the name of a Secrets Manager secret (not its ARN: the grant adds the suffix Secrets Manager gives)',
  ],
  tenantRegistryParameter: [
    /^\/[A-Za-z0-9_.\-/]{1,1010}$/,
    'the name of an SSM parameter, starting with "/"',
  ],
  tenantRegistryKmsKeyArn: [
    /^arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:key\/[A-Za-z0-9-]+$/,
    'the ARN of a KMS key',
  ],
  logLevel: [/^(DEBUG|INFO|WARN|ERROR)$/, 'DEBUG, INFO, WARN or ERROR'],
  metricsNamespace: [/^[A-Za-z0-9._/#:-]{1,255}$/, 'a CloudWatch namespace'],
  dataApiPrefix: [/^[A-Za-z0-9_-]{1,64}$/, 'one path segment'],
  webApiPrefix: [/^[A-Za-z0-9_-]{1,64}$/, 'one path segment'],
  webhookRetrySchedule: [LIST('[0-9]{1,5}'), 'comma-separated seconds'],
  webhookMaxAttempts: [/^[1-9][0-9]{0,2}$/, 'a whole number from 1'],
  webhookMaxReceives: [/^([1-9][0-9]{0,2}|1000)$/, 'a whole number from 1 to 1000 (SQS maxReceiveCount)'],
  webhookSecretOverlapHours: [/^[0-9]{1,4}(\.[0-9]+)?$/, 'hours (fractions allowed), 0–8760'],
  webhookDisableAfterHours: [/^[0-9]{1,4}(\.[0-9]+)?$/, 'hours (fractions allowed), 0–8760'],
  webApiJobWorkerTimeout: [/^[1-9][0-9]{0,2}$/, 'seconds, 1–900'],
  webApiJobVisibility: [/^[1-9][0-9]{0,4}$/, 'seconds'],
  webApiJobMaxAttempts: [/^[1-9][0-9]?$|^100$/, 'a whole number from 1 to 100'],
  webApiJobMaxReceives: [/^([1-9][0-9]{0,2}|1000)$/, 'a whole number from 1 to 1000 (SQS maxReceiveCount)'],
  webApiJobStaleSeconds: [/^[1-9][0-9]{0,5}$/, 'seconds'],
  changeRetentionSchedule: [
    /^rate\((1 (minute|hour|day)|([2-9]|[1-9][0-9]{1,3}) (minutes|hours|days))\)$/,
    'an EventBridge rate, e.g. rate(1 hour) or rate(30 minutes)',
  ],
  serverErrorRatePercent: [/^[0-9]{1,2}(\.[0-9]+)?$|^100$/, 'a percentage'],
  httpApiServerErrorMinRequests: [/^[1-9][0-9]{0,6}$/, 'a whole number of requests from 1'],
  webhookFailureRatePercent: [/^[0-9]{1,2}(\.[0-9]+)?$|^100$/, 'a percentage'],
  webApiJobAgeAlarmSeconds: [/^[1-9][0-9]{0,5}$/, 'seconds'],
  // From 1: a 0 would refuse every request, which is no throttling setting but an outage.
  httpApiThrottleBurst: [/^[1-9][0-9]{0,5}$/, 'a whole number of requests from 1'],
  httpApiThrottleRate: [/^(?=.*[1-9])[0-9]{1,6}(\.[0-9]+)?$/, 'requests per second, above 0'],
  // Reserved concurrency: from 1 (0 would stop every HTTP function); each of the HTTP functions
  // takes this much from the account's concurrency (below).
  requestFunctionConcurrency: [/^[1-9][0-9]{0,3}$/, 'a whole number of instances, 1–1000'],
  // An SQS event source's maximumConcurrency: 2–1000, as Lambda takes it.
  jobWorkerConcurrency: [/^[1-9][0-9]{0,3}$/, 'a whole number of batches at once, 2–1000'],
  webhookConcurrency: [/^[1-9][0-9]{0,3}$/, 'a whole number of batches at once, 2–1000'],
  // Fair share between tenants (docs/operations.md "Fair share between tenants").
  tenantConcurrentRequests: [/^[1-9][0-9]{0,3}$/, 'a whole number of requests in progress, 1–1000'],
  tenantRequestsPerSecond: [/^[1-9][0-9]{0,4}$/, 'a whole number of requests per second, 1–10000'],
  tenantLimitsTimeoutMs: [/^[1-9][0-9]{1,3}$/, 'milliseconds, 10–5000'],
  tenantThrottledAlarmCount: [/^[0-9]{1,7}$/, 'a whole number of refused requests'],
};

/** name → [least, most] of the whole numbers above whose range a pattern cannot say. */
const RANGES = {
  requestFunctionConcurrency: [1, 1000],
  jobWorkerConcurrency: [2, 1000],
  webhookConcurrency: [2, 1000],
  tenantConcurrentRequests: [1, 1000],
  tenantRequestsPerSecond: [1, 10000],
  tenantLimitsTimeoutMs: [10, 5000],
};

const REQUIRED_TO_DEPLOY = ['vpcSubnetIds', 'vpcSecurityGroupIds'];

/** The problems of `values` (custom.deployParameters), one sentence each. */
function parameterProblems(values, { deploying }) {
  const problems = [];
  for (const [name, [shape, meaning]] of Object.entries(SHAPES)) {
    const raw = values[name];
    const value = raw === undefined || raw === null ? '' : String(raw);
    if (value === '') {
      if (deploying && REQUIRED_TO_DEPLOY.includes(name)) {
        problems.push(`${name} is required to deploy: ${meaning}`);
      }
      continue;
    }
    const range = RANGES[name];
    const outside = range && (Number(value) < range[0] || Number(value) > range[1]);
    if (!shape.test(value) || outside) problems.push(`${name} must be ${meaning}; got "${value}"`);
  }
  const schedule = String(values.webhookRetrySchedule ?? '');
  const attempts = Number(values.webhookMaxAttempts);
  if (schedule && attempts && schedule.split(',').length + 1 !== attempts) {
    problems.push(
      `webhookMaxAttempts must be the number of delays in webhookRetrySchedule plus one (${
        schedule.split(',').length + 1
      }); got ${attempts}`,
    );
  }
  // Attempts are counted where they are recorded; the queues' maxReceiveCount must leave room for
  // receives that never reach the function (a throttled consumer), or such receives use up attempts.
  const roomForThrottledReceives = [
    ['webhookMaxReceives', 'webhookMaxAttempts'],
    ['webApiJobMaxReceives', 'webApiJobMaxAttempts'],
  ];
  for (const [receivesName, attemptsName] of roomForThrottledReceives) {
    const receives = Number(values[receivesName]);
    const most = Number(values[attemptsName]);
    if (receives && most && receives <= most) {
      problems.push(
        `${receivesName} must be more than ${attemptsName} (${most}), to leave room for receives that never reach the function; got ${receives}`,
      );
    }
  }
  const timeout = Number(values.webApiJobWorkerTimeout);
  if (timeout > 900) problems.push(`webApiJobWorkerTimeout must be at most 900 seconds; got ${timeout}`);
  const visibility = Number(values.webApiJobVisibility);
  if (timeout && visibility && visibility < timeout) {
    problems.push(
      `webApiJobVisibility must be at least webApiJobWorkerTimeout (${timeout}); got ${visibility}`,
    );
  }
  const receives = Number(values.webApiJobMaxReceives);
  const stale = Number(values.webApiJobStaleSeconds);
  if (receives && visibility && stale && stale <= receives * visibility) {
    problems.push(
      `webApiJobStaleSeconds must be longer than webApiJobMaxReceives × webApiJobVisibility (${
        receives * visibility
      }), or 997 gives up jobs still waiting on the queue; got ${stale}`,
    );
  }
  // The three settings of capacity and fair share must fit together (docs/operations.md "Fair share
  // between tenants"): a tenant's share below each function's capacity, so that one tenant never
  // holds a whole function; its burst and rate within the stage's throttling, so that one tenant
  // never spends the rate every tenant shares.
  const capacity = Number(values.requestFunctionConcurrency);
  const share = Number(values.tenantConcurrentRequests);
  if (capacity && share && share >= capacity) {
    problems.push(
      `tenantConcurrentRequests must be below requestFunctionConcurrency (${capacity}), or one tenant can hold every instance of a function; got ${share}`,
    );
  }
  const tenantRate = Number(values.tenantRequestsPerSecond);
  const stageBurst = Number(values.httpApiThrottleBurst);
  const stageRate = Number(values.httpApiThrottleRate);
  if (tenantRate && stageBurst && 2 * tenantRate >= stageBurst) {
    problems.push(
      `tenantRequestsPerSecond must be below half of httpApiThrottleBurst (${stageBurst}): a tenant's burst (twice its rate) must leave the stage's burst room for the others; got ${tenantRate}`,
    );
  }
  if (tenantRate && stageRate && tenantRate >= stageRate) {
    problems.push(
      `tenantRequestsPerSecond must be below httpApiThrottleRate (${stageRate}), or one tenant can spend the stage's whole rate; got ${tenantRate}`,
    );
  }
  const age = Number(values.webApiJobAgeAlarmSeconds);
  if (stale && age && age >= stale) {
    // By then 997 has given the job up: the alarm would only ever report what is already lost.
    problems.push(`webApiJobAgeAlarmSeconds must be below webApiJobStaleSeconds (${stale}); got ${age}`);
  }
  return problems;
}

class DeployParameterChecks {
  constructor(serverless) {
    this.serverless = serverless;
    const check = (deploying) => () => {
      const values = this.serverless.service.custom?.deployParameters ?? {};
      const problems = parameterProblems(values, { deploying });
      if (problems.length > 0) {
        throw new this.serverless.classes.Error(
          `Deploy parameters (--param="name=value", docs/operations.md "Deploy, step by step"):\n  - ${problems.join('\n  - ')}`,
          'INVALID_DEPLOY_PARAMETERS',
        );
      }
    };
    this.hooks = {
      'before:package:initialize': check(false),
      'before:deploy:deploy': check(true),
    };
  }
}

module.exports = DeployParameterChecks;
module.exports.parameterProblems = parameterProblems;
