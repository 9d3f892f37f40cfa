// fencegate/prometheus: Prometheus metrics from the audit trail with prom-client.
// `prometheusAudit()` returns an `onVerdict` callback for MemoryGate / Gate:
//   fencegate_verdicts_total{operation,outcome,code}            counter (code "none" when applied)
//   fencegate_decision_duration_seconds{operation,outcome}      histogram: the call minus the host commit
//   fencegate_commit_duration_seconds{operation,outcome}        histogram: the host's commit/transaction (only when one ran)
// Label values are bounded: never the key, the token or the holder.
import { Counter, Histogram, register as defaultRegistry } from 'prom-client';
import { checkOptions } from '../lib/options.mjs';

/** Default histogram buckets (seconds): 50 µs … 2.5 s. */
export const DURATION_BUCKETS = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

function metric(registry, name, make) {
  return registry.getSingleMetric(name) ?? make();
}

/**
 * An `onVerdict` callback that updates the metrics above. Options: `registry`
 * (default prom-client's global one), `prefix` (default `"fencegate_"`),
 * `buckets` (seconds), `next` (another audit callback, called after). Calling
 * it twice with the same registry and prefix shares the metrics.
 */
export function prometheusAudit(options = {}) {
  options = checkOptions(options, { registry: 'object', prefix: 'string', buckets: 'array', next: 'function' }, 'prometheusAudit');
  const registry = options.registry ?? defaultRegistry;
  const prefix = options.prefix ?? 'fencegate_';
  const buckets = options.buckets ?? DURATION_BUCKETS;
  const next = options.next ?? null;
  const registers = [registry];
  const verdicts = metric(registry, `${prefix}verdicts_total`, () => new Counter({
    name: `${prefix}verdicts_total`,
    help: 'Fenced operations decided, by operation, outcome and code (code "none" when applied)',
    labelNames: ['operation', 'outcome', 'code'],
    registers,
  }));
  // The two duration histograms: same labels and buckets, by name and help.
  const duration = (name, help) => metric(registry, `${prefix}${name}`, () => new Histogram({
    name: `${prefix}${name}`,
    help,
    labelNames: ['operation', 'outcome'],
    buckets,
    registers,
  }));
  const decision = duration('decision_duration_seconds', 'Time a fenced operation spent outside the host commit: loading and deciding');
  const commit = duration('commit_duration_seconds', "Time a fenced operation spent in the host store's commit or transaction");
  return function onVerdict(record) {
    const labels = { operation: record.operation, outcome: record.outcome };
    verdicts.inc({ ...labels, code: record.code ?? 'none' });
    if (typeof record.durationMs === 'number') {
      decision.observe(labels, Math.max(0, record.durationMs - (record.commitMs ?? 0)) / 1000);
    }
    if (typeof record.commitMs === 'number') commit.observe(labels, record.commitMs / 1000);
    if (next !== null) return next(record);
  };
}
