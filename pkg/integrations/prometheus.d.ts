/**
 * fencegate/prometheus — Prometheus metrics from the audit trail (prom-client
 * ≥ 15, an optional peer dependency).
 *
 * - `fencegate_verdicts_total{operation,outcome,code}` counter (`code="none"` when applied)
 * - `fencegate_decision_duration_seconds{operation,outcome}` histogram: the call minus the host commit
 * - `fencegate_commit_duration_seconds{operation,outcome}` histogram: the host's commit or transaction, when one ran
 *
 * Label values are bounded; never the key, token or holder.
 */
import type { Registry } from 'prom-client';
import type { AuditRecord } from 'fencegate';

/** Default histogram buckets in seconds: 50 µs … 2.5 s. */
export const DURATION_BUCKETS: number[];

/** Options of {@link prometheusAudit}. */
export interface PrometheusAuditOptions {
  /** Default: prom-client's global `register`. */
  registry?: Registry;
  /** Metric name prefix; default `"fencegate_"`. */
  prefix?: string;
  /** Histogram buckets in seconds; default {@link DURATION_BUCKETS}. */
  buckets?: number[];
  /** Another audit callback, called after recording (its result is returned). */
  next?: (record: AuditRecord) => void | Promise<void>;
}

/**
 * An `onVerdict` callback for `new MemoryGate({ onVerdict })` / `new Gate(store, { onVerdict })`.
 * Calling it twice with the same registry and prefix shares the metrics.
 * @example new Gate(store, { onVerdict: prometheusAudit() })
 * @throws FencegateError INVALID_ARGUMENT for options that are not an object, an unknown option name or a mistyped option.
 */
export function prometheusAudit(options?: PrometheusAuditOptions): (record: AuditRecord) => void | Promise<void>;
