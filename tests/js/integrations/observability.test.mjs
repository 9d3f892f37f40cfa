// fencegate/otel and fencegate/prometheus (issue 18): one scripted run of
// advances, accepts, a duplicate and every refusal code a verdict can carry,
// recorded through the real OpenTelemetry SDK (in-memory metric exporter,
// in-memory span exporter, AsyncLocalStorage context) and a real prom-client
// registry; exact series and counts afterwards, and no key, token or holder in
// any label.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { MemoryGate, Gate, MemoryHostStore, mintToken } from '../../../pkg/node.mjs';
import { otelAudit } from '../../../pkg/integrations/otel.mjs';
import { prometheusAudit, DURATION_BUCKETS } from '../../../pkg/integrations/prometheus.mjs';
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { MeterProvider, PeriodicExportingMetricReader, InMemoryMetricExporter, AggregationTemporality } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { Registry } from 'prom-client';

const require = createRequire(import.meta.url);
const SECRET_KEY = 'key-customer-4711';
const HOLDER = 'holder-node-a';

/**
 * The scripted run; every gate reports to `onVerdict`. Returns the verdicts in
 * order as "operation/outcome/code".
 */
async function script(onVerdict) {
  const seen = [];
  const tap = (op) => (v) => { seen.push(`${op}/${v.outcome}/${v.code ?? 'none'}`); return v; };
  // a host-store Gate (compare-and-set): commits are timed
  const gate = new Gate(new MemoryHostStore(), { onVerdict, opWindow: 1 });
  const k = SECRET_KEY;
  tap('write')(await gate.write(k, 3, 'a', { holder: HOLDER }));            // advance (commit)
  tap('write')(await gate.write(k, 3, 'b', { holder: HOLDER }));            // accept (commit)
  tap('establish')(await gate.establish(k, 4, { holder: HOLDER }));         // advance (commit)
  tap('write')(await gate.write(k, undefined, 'c'));                        // MISSING_TOKEN
  tap('write')(await gate.write(k, '007', 'c'));                            // MALFORMED_TOKEN
  tap('write')(await gate.write(k, 2, 'c'));                                // STALE_TOKEN
  tap('write')(await gate.write(k, 4, 'c', { holder: 'holder-node-b' }));   // EPOCH_CONFLICT
  tap('write')(await gate.write(k, 4, 'd', { opId: 'op-1' }));              // accept (commit)
  tap('write')(await gate.write(k, 4, 'd', { opId: 'op-1' }));              // duplicate (no commit)
  tap('write')(await gate.write(k, 4, 'e', { opId: 'op-2' }));              // accept (commit), evicts op-1
  tap('write')(await gate.write(k, 4, 'd', { opId: 'op-1' }));              // OP_ID_EXPIRED
  tap('write')(await gate.write(k, 4, 'g', { opId: 'op-3', fingerprint: 'g' })); // accept (commit)
  tap('write')(await gate.write(k, 4, 'h', { opId: 'op-3', fingerprint: 'h' })); // OP_ID_REUSED
  tap('delete')(await gate.delete(k, 4));                                   // accept (commit)
  await gate.quarantine(k, 9);
  tap('write')(await gate.write(k, 9, 'f'));                                // QUARANTINED
  // MemoryGates: no host commit
  const strict = new MemoryGate({ sameEpoch: 'strict', onVerdict });
  tap('write')(strict.write(k, 1, 'a'));                                    // advance
  tap('write')(strict.write(k, 1, 'b'));                                    // SAME_EPOCH_REJECTED
  const secret = new Uint8Array(32).fill(3);
  const signed = new MemoryGate({ requireSigned: true, keys: { k1: secret }, retired: ['k0'], onVerdict });
  const mint = (scope, kid = 'k1', hmac = secret) => mintToken({ scope, epoch: 5, leaseId: HOLDER }, { kid, hmac });
  tap('write')(signed.write(k, mint(k), 'ok'));                             // advance
  tap('write')(signed.write(k, 5, 'x'));                                    // UNSIGNED_TOKEN
  tap('write')(signed.write(k, mint(k, 'k9'), 'x'));                        // UNKNOWN_KEY
  tap('write')(signed.write(k, mint(k, 'k0'), 'x'));                        // KEY_RETIRED
  tap('write')(signed.write(k, mint(k, 'k1', new Uint8Array(32).fill(4)), 'x')); // BAD_SIGNATURE
  tap('write')(signed.write(k, mint('other'), 'x'));                        // WRONG_SCOPE
  const within = new MemoryGate({ higherEpoch: { mode: 'adopt-within', maxJump: 2 }, onVerdict });
  tap('establish')(within.establish(k, 3));                                 // EPOCH_JUMP_TOO_LARGE
  const future = new MemoryGate({ higherEpoch: { mode: 'reject-future', ceiling: 1 }, onVerdict });
  tap('write')(future.write(k, 2, 'x'));                                    // FUTURE_EPOCH
  return seen;
}

const VERDICTS = {
  'write/advance/none': 3, 'write/accept/none': 4, 'establish/advance/none': 1, 'delete/accept/none': 1, 'write/duplicate/none': 1,
  'write/reject/MISSING_TOKEN': 1, 'write/reject/MALFORMED_TOKEN': 1, 'write/reject/STALE_TOKEN': 1, 'write/reject/EPOCH_CONFLICT': 1,
  'write/reject/OP_ID_EXPIRED': 1, 'write/reject/OP_ID_REUSED': 1, 'write/reject/QUARANTINED': 1, 'write/reject/SAME_EPOCH_REJECTED': 1, 'write/reject/UNSIGNED_TOKEN': 1,
  'write/reject/UNKNOWN_KEY': 1, 'write/reject/KEY_RETIRED': 1, 'write/reject/BAD_SIGNATURE': 1, 'write/reject/WRONG_SCOPE': 1,
  'establish/reject/EPOCH_JUMP_TOO_LARGE': 1, 'write/reject/FUTURE_EPOCH': 1,
};
// histogram counts per operation/outcome: every verdict is timed; commits only on the Gate's applied operations
const DECISIONS = {
  'write/advance': 3, 'write/accept': 4, 'establish/advance': 1, 'delete/accept': 1, 'write/duplicate': 1, 'write/reject': 14, 'establish/reject': 1,
};
const COMMITS = { 'write/advance': 1, 'write/accept': 4, 'establish/advance': 1, 'delete/accept': 1 };

const tally = (list) => list.reduce((m, s) => ({ ...m, [s]: (m[s] ?? 0) + 1 }), {});

test('the scripted run produces every verdict code once, and the expected outcomes', async () => {
  assert.deepEqual(tally(await script(undefined)), VERDICTS);
});

test('OpenTelemetry: exact counter series, histogram counts, units, and a span event per verdict on the active span', async () => {
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 });
  const provider = new MeterProvider({ readers: [reader] });
  const spans = new InMemorySpanExporter();
  const tracer = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] }).getTracer('test');
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  try {
    const onVerdict = otelAudit({ meter: provider.getMeter('fencegate') });
    const seen = await tracer.startActiveSpan('request', async (span) => {
      try {
        return await script(onVerdict);
      } finally {
        span.end();
      }
    });
    await reader.forceFlush();
    const metrics = exporter.getMetrics().at(-1).scopeMetrics.flatMap((s) => s.metrics);
    const byName = Object.fromEntries(metrics.map((m) => [m.descriptor.name, m]));
    assert.deepEqual(Object.keys(byName).sort(), ['fencegate.commit.duration', 'fencegate.decision.duration', 'fencegate.verdicts']);
    assert.deepEqual(
      [byName['fencegate.verdicts'].descriptor.unit, byName['fencegate.decision.duration'].descriptor.unit, byName['fencegate.commit.duration'].descriptor.unit],
      ['{verdict}', 's', 's'],
    );
    const counter = Object.fromEntries(byName['fencegate.verdicts'].dataPoints.map((p) => {
      const a = p.attributes;
      assert.deepEqual(Object.keys(a).sort(), ['fencegate.code', 'fencegate.operation', 'fencegate.outcome']);
      return [`${a['fencegate.operation']}/${a['fencegate.outcome']}/${a['fencegate.code']}`, p.value];
    }));
    assert.deepEqual(counter, VERDICTS);
    const counts = (m) => Object.fromEntries(byName[m].dataPoints.map((p) => {
      assert.ok(p.value.sum >= 0 && p.value.min >= 0, JSON.stringify(p.value));
      return [`${p.attributes['fencegate.operation']}/${p.attributes['fencegate.outcome']}`, p.value.count];
    }));
    assert.deepEqual(counts('fencegate.decision.duration'), DECISIONS);
    assert.deepEqual(counts('fencegate.commit.duration'), COMMITS);

    const [span] = spans.getFinishedSpans();
    assert.equal(span.name, 'request');
    const events = span.events.map((e) => {
      assert.equal(e.name, 'fencegate.verdict');
      const a = e.attributes;
      return `${a['fencegate.operation']}/${a['fencegate.outcome']}/${a['fencegate.code']}`;
    });
    assert.deepEqual(events, seen);
    assert.deepEqual(span.events[0].attributes, {
      'fencegate.operation': 'write', 'fencegate.outcome': 'advance', 'fencegate.code': 'none', 'fencegate.mark_before': '0', 'fencegate.mark_after': '3',
    });
    // bounded: no key, token or holder anywhere in the metrics or the events
    const all = JSON.stringify([metrics.map((m) => m.dataPoints.map((p) => p.attributes)), span.events]);
    for (const secret of [SECRET_KEY, HOLDER, 'holder-node-b', 'fg1.', 'op-1', 'op-3']) assert.ok(!all.includes(secret), secret);
    // outside any span nothing breaks and no event is recorded
    const g = new MemoryGate({ onVerdict });
    assert.equal(g.write('k', 1, 'x').outcome, 'advance');
    assert.equal(trace.getActiveSpan(), undefined);
    assert.deepEqual(g.counters().auditErrors, 0);
  } finally {
    contextManager.disable();
    context.disable();
    await provider.shutdown();
  }
});

test('Prometheus (prom-client): exact series in a registry, histogram counts, no key/token/holder label; shared metrics on a second call', async () => {
  const registry = new Registry();
  const seen = [];
  const onVerdict = prometheusAudit({ registry, next: (r) => { seen.push(r.operation); } });
  await script(onVerdict);
  assert.equal(seen.length, 25);
  const json = await registry.getMetricsAsJSON();
  assert.deepEqual(json.map((m) => [m.name, m.type]).sort(), [
    ['fencegate_commit_duration_seconds', 'histogram'],
    ['fencegate_decision_duration_seconds', 'histogram'],
    ['fencegate_verdicts_total', 'counter'],
  ]);
  const metric = (name) => json.find((m) => m.name === name);
  assert.deepEqual(
    Object.fromEntries(metric('fencegate_verdicts_total').values.map((v) => [`${v.labels.operation}/${v.labels.outcome}/${v.labels.code}`, v.value])),
    VERDICTS,
  );
  const counts = (name) => Object.fromEntries(metric(name).values
    .filter((v) => v.metricName === `${name}_count`)
    .map((v) => [`${v.labels.operation}/${v.labels.outcome}`, v.value]));
  assert.deepEqual(counts('fencegate_decision_duration_seconds'), DECISIONS);
  assert.deepEqual(counts('fencegate_commit_duration_seconds'), COMMITS);
  assert.deepEqual(
    metric('fencegate_commit_duration_seconds').values.filter((v) => v.metricName.endsWith('_bucket') && v.labels.operation === 'delete').map((v) => v.labels.le),
    [...DURATION_BUCKETS, '+Inf'],
  );
  const text = await registry.metrics();
  assert.match(text, /^fencegate_verdicts_total\{operation="write",outcome="reject",code="STALE_TOKEN"\} 1$/m);
  assert.match(text, /^fencegate_verdicts_total\{operation="write",outcome="advance",code="none"\} 3$/m);
  for (const secret of [SECRET_KEY, HOLDER, 'holder-node-b', 'fg1.', 'op-1', 'op-3']) assert.ok(!text.includes(secret), secret);
  const labelNames = new Set(json.flatMap((m) => m.values.flatMap((v) => Object.keys(v.labels))));
  assert.deepEqual([...labelNames].sort(), ['code', 'le', 'operation', 'outcome']);

  // a second callback on the same registry shares the metrics instead of throwing
  const again = prometheusAudit({ registry });
  new MemoryGate({ onVerdict: again }).write('k', 1, 'x');
  const after = (await registry.getMetricsAsJSON()).find((m) => m.name === 'fencegate_verdicts_total');
  assert.equal(after.values.find((v) => v.labels.operation === 'write' && v.labels.outcome === 'advance').value, 4);
});

test('CommonJS copies: require("fencegate/otel") and require("fencegate/prometheus")', () => {
  const otel = require('../../../pkg/dist/integrations/otel.cjs');
  const prom = require('../../../pkg/dist/integrations/prometheus.cjs');
  assert.equal(typeof otel.otelAudit, 'function');
  assert.deepEqual(Object.keys(prom).sort(), ['DURATION_BUCKETS', 'prometheusAudit']);
  const registry = new (require('prom-client').Registry)();
  const { MemoryGate: CjsGate } = require('../../../pkg/node.cjs');
  new CjsGate({ onVerdict: prom.prometheusAudit({ registry }) }).write('k', 1, 'x');
  return registry.getMetricsAsJSON().then((json) => {
    assert.deepEqual(json.find((m) => m.name === 'fencegate_verdicts_total').values, [{ value: 1, labels: { operation: 'write', outcome: 'advance', code: 'none' } }]);
  });
});

test('README "Observability" snippet runs as printed and counts a verdict in the global registry', async () => {
  const { readmeBlocks } = await import('../../doc-blocks.mjs');
  const { mkdirSync, mkdtempSync, writeFileSync } = await import('node:fs');
  const { execFileSync } = await import('node:child_process');
  const { join } = await import('node:path');
  const [block] = readmeBlocks('Observability: OpenTelemetry and Prometheus');
  const pkg = (p) => new URL(`../../../pkg/${p}`, import.meta.url).href;
  const code = block
    .replace("from 'fencegate/otel'", `from '${pkg('integrations/otel.mjs')}'`)
    .replace("from 'fencegate/prometheus'", `from '${pkg('integrations/prometheus.mjs')}'`)
    .replace("from 'fencegate'", `from '${pkg('node.mjs')}'`);
  // inside the repository, so @opentelemetry/api and prom-client resolve from its node_modules
  const buildDir = new URL('../../../build/', import.meta.url).pathname;
  mkdirSync(buildDir, { recursive: true });
  const file = join(mkdtempSync(join(buildDir, 'readme-otel-')), 'obs.mjs');
  writeFileSync(file, `${code}
await gate.write('k', 1, 'v');
await gate.write('k', 0, 'v');
const { register } = await import('prom-client');
console.log(await register.getSingleMetricAsString('fencegate_verdicts_total'));
`);
  assert.equal(execFileSync('node', [file], { encoding: 'utf8' }), [
    '# HELP fencegate_verdicts_total Fenced operations decided, by operation, outcome and code (code "none" when applied)',
    '# TYPE fencegate_verdicts_total counter',
    'fencegate_verdicts_total{operation="write",outcome="advance",code="none"} 1',
    'fencegate_verdicts_total{operation="write",outcome="reject",code="MALFORMED_TOKEN"} 1',
    '',
  ].join('\n'));
});
