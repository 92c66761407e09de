/**
 * The service's counters, as the core sees them. One call is one observation: every metric of
 * `values` counted once under each dimension set (CloudWatch embedded metric format underneath).
 */
export interface ServiceMetrics {
  count(
    values: Readonly<Record<string, number>>,
    dimensionSets: readonly Readonly<Record<string, string>>[],
  ): void;
}

/** Metrics that go nowhere: the default where a caller passes none (unit tests of the core). */
export const noMetrics: ServiceMetrics = { count: () => undefined };

/** The metric names the service publishes (alarms in infra/resources/alarms.yml refer to them). */
export const MetricName = {
  requests: 'Requests',
  serverErrors: 'ServerErrors',
  webApiCalls: 'WebApiCalls',
  asyncTimeouts: 'WebApiAsyncTimeouts',
  jobs: 'WebApiJobs',
  webhookAttempts: 'WebhookAttempts',
  webhookFailures: 'WebhookFailures',
  deadLettered: 'DeadLettered',
  webhookEndpointDisabled: 'WebhookEndpointDisabled',
  /** A request refused for its tenant's fair share (dimension `tenant`, and the service's sum). */
  tenantThrottled: 'TenantThrottled',
  /** A request that went on uncounted because the tenants' load store did not answer in time. */
  tenantLimitsUnavailable: 'TenantLimitsUnavailable',
  /** A statement refused because the service's database login lacks a permission (dimension `tenant`, and the sum). */
  databasePermissionDenied: 'DatabasePermissionDenied',
} as const;
