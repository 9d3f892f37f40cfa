// fencegate/otel: OpenTelemetry metrics and span events from the audit trail.
// `otelAudit()` returns an `onVerdict` callback for MemoryGate / Gate that
// records, through @opentelemetry/api only (the SDK is the application's):
//   fencegate.verdicts          counter    {verdicts}  attributes fencegate.operation, fencegate.outcome, fencegate.code
//   fencegate.decision.duration histogram  s           the call minus the host commit; fencegate.operation, fencegate.outcome
//   fencegate.commit.duration   histogram  s           the host's commit/transaction; same attributes (only when one ran)
// and a `fencegate.verdict` event on the active span. Attribute values are
// bounded (3 operations × 4 outcomes × the fixed codes): never the key, the
// token or the holder.
import { metrics, trace } from '@opentelemetry/api';
import { checkOptions } from '../lib/options.mjs';

const SCOPE = 'fencegate';

/**
 * An `onVerdict` callback that records metrics (and span events) for every
 * verdict. Options: `meter` (default `metrics.getMeter('fencegate')`),
 * `spanEvents` (default true), `next` (another audit callback, called after).
 */
export function otelAudit(options = {}) {
  options = checkOptions(options, { meter: 'object', spanEvents: 'boolean', next: 'function' }, 'otelAudit');
  const meter = options.meter ?? metrics.getMeter(SCOPE);
  const spanEvents = options.spanEvents ?? true;
  const next = options.next ?? null;
  const verdicts = meter.createCounter('fencegate.verdicts', {
    description: 'Fenced operations decided, by operation, outcome and code (code "none" when applied)',
    unit: '{verdict}',
  });
  const decision = meter.createHistogram('fencegate.decision.duration', {
    description: 'Time a fenced operation spent outside the host commit: loading and deciding',
    unit: 's',
  });
  const commit = meter.createHistogram('fencegate.commit.duration', {
    description: "Time a fenced operation spent in the host store's commit or transaction",
    unit: 's',
  });
  return function onVerdict(record) {
    const base = { 'fencegate.operation': record.operation, 'fencegate.outcome': record.outcome };
    verdicts.add(1, { ...base, 'fencegate.code': record.code ?? 'none' });
    if (typeof record.durationMs === 'number') {
      decision.record(Math.max(0, record.durationMs - (record.commitMs ?? 0)) / 1000, base);
    }
    if (typeof record.commitMs === 'number') commit.record(record.commitMs / 1000, base);
    if (spanEvents) {
      const span = trace.getActiveSpan();
      if (span !== undefined) {
        span.addEvent('fencegate.verdict', {
          ...base,
          'fencegate.code': record.code ?? 'none',
          'fencegate.mark_before': String(record.markBefore),
          'fencegate.mark_after': String(record.markAfter),
        });
      }
    }
    if (next !== null) return next(record);
  };
}
