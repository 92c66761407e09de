import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';
import type { ServiceMetrics } from '../../core/metrics.js';

/** Where EMF documents go: stdout in Lambda (CloudWatch Logs extracts them), elsewhere the caller's choice. */
export type EmfSink = (document: string) => void;

export const writeToStdout: EmfSink = (document) => {
  process.stdout.write(`${document}\n`);
};

export interface EmfMetricsOptions {
  readonly namespace?: string;
  readonly serviceName?: string;
  readonly sink?: EmfSink;
}

/**
 * Counters as CloudWatch embedded metric format documents built by Powertools Metrics: one
 * document per observation, so that each carries its own dimension sets (a Powertools instance
 * shares its dimensions across all the metrics it flushes). One instance serves every observation,
 * cleared before each: building a new one per observation cost about four times as much (it reads
 * its environment settings anew), twice on every signed call.
 */
export function createEmfMetrics(options: EmfMetricsOptions = {}): ServiceMetrics {
  const namespace = options.namespace ?? process.env.POWERTOOLS_METRICS_NAMESPACE ?? 'ErpIntegrationGateway';
  const serviceName = options.serviceName ?? process.env.POWERTOOLS_SERVICE_NAME ?? 'erp-integration-gateway';
  const sink = options.sink ?? writeToStdout;
  const metrics = new Metrics({ namespace, serviceName });
  return {
    count(values, dimensionSets) {
      metrics.clearMetrics();
      metrics.clearDimensions();
      const [first = {}, ...others] = dimensionSets;
      // An empty set stands for the service dimension alone; Powertools would leave it out once
      // another set is added, unless it is added as a set of its own.
      if (Object.keys(first).length === 0) metrics.addDimensions({});
      for (const [name, value] of Object.entries(first)) metrics.addDimension(name, value);
      for (const set of others) metrics.addDimensions({ ...set });
      for (const [name, value] of Object.entries(values)) metrics.addMetric(name, MetricUnit.Count, value);
      sink(JSON.stringify(metrics.serializeMetrics()));
    },
  };
}
