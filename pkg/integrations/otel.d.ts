/**
 * fencegate/otel — OpenTelemetry metrics and span events from the audit trail
 * (`@opentelemetry/api` ≥ 1.3, an optional peer dependency; the SDK is yours).
 *
 * | instrument | kind | unit | attributes |
 * |---|---|---|---|
 * | `fencegate.verdicts` | counter | `{verdict}` | `fencegate.operation`, `fencegate.outcome`, `fencegate.code` (`"none"` when applied) |
 * | `fencegate.decision.duration` | histogram | s | `fencegate.operation`, `fencegate.outcome` |
 * | `fencegate.commit.duration` | histogram | s | the same; only when a host commit/transaction ran |
 *
 * Span event `fencegate.verdict` on the active span: the same attributes plus
 * `fencegate.mark_before`, `fencegate.mark_after` (decimal text). Never the
 * key, token or holder.
 */
import type { Meter } from '@opentelemetry/api';
import type { AuditRecord } from 'fencegate';

/** Options of {@link otelAudit}. */
export interface OtelAuditOptions {
  /** Default: `metrics.getMeter('fencegate')` from the global MeterProvider. */
  meter?: Meter;
  /** Add a `fencegate.verdict` event to the active span; default true. */
  spanEvents?: boolean;
  /** Another audit callback, called after recording (its result is returned). */
  next?: (record: AuditRecord) => void | Promise<void>;
}

/**
 * An `onVerdict` callback for `new MemoryGate({ onVerdict })` / `new Gate(store, { onVerdict })`.
 * @example new Gate(store, { onVerdict: otelAudit() })
 * @throws FencegateError INVALID_ARGUMENT for options that are not an object, an unknown option name or a mistyped option.
 */
export function otelAudit(options?: OtelAuditOptions): (record: AuditRecord) => void | Promise<void>;
