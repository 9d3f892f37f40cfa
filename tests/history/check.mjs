#!/usr/bin/env node
// The history checker (issue 16). Runs on a history file written by run.mjs
// (or any file of the same lines) and prints every violation with the history
// lines that show it:
//   node tests/history/check.mjs FILE            exit 0: no violation, 1: violations
//
// Lines (JSON, one per line; `m` is CLOCK_MONOTONIC in µs, shared by every
// process on the machine; `t` wall-clock ms for people):
//   { ev: 'invoke', id, p, pid, op, key, holder, token?, opId?, requestId?, … }
//   { ev: 'ok' | 'unknown' | 'fail', id, … }   the completion of `id`: a result
//       (verdict or issuer result), COMMIT_UNKNOWN, or another error (nothing applied)
//   { ev: 'fault', kind, … }  { ev: 'drill', phase: 'backup'|'restoring'|'restore'|'reconciled' }
//       (restoring: the restore writes begin; restore: they are done; reconciled: raise + reconcile done)
//   { ev: 'final', key, mark, hasValue, value, issuerEpoch, ownLog? }   read after every client stopped
//       ({ ev: 'final', key, corrupt } when its fence row does not decode)
//   { ev: 'invoke', op: 'rogue', p: -2, kind, key, table, expect: { code, text: [part…] } } and its
//       completion `ok` { rows } or `fail` { code, message, lost? }   (rogue.mjs)
// op: acquire | renew | release (issuer, scope = key) | establish | write | read
// (resource) | reconcile (the drill). A write's value is { w: opId, key, token, holder }.
//
// An operation takes effect at one instant between its invocation and its
// completion (never, for an `ok` refusal or a `fail`; at most once, for an
// `unknown` or one with no completion). Real-time order: A before B when A
// completed before B was invoked. Checked, per key:
//   (a) an applied write's token is never below a mark established before it
//       was invoked (and never below the mark its own verdict reports);
//   (b) no epoch was applied for two different holders;
//   (c) the final value is the value of a write that was applied and not
//       overwritten by a write acknowledged after it (a COMMIT_UNKNOWN write
//       whose value is the final one is thereby proven applied); a final state
//       with no value while a write was acknowledged is a lost write;
//   (d) what was acknowledged stays visible: no operation sees a mark below one
//       left by an operation that completed before it began, no read sees a value
//       overwritten before it began, and no refused write's value is ever seen;
//   (e) an op id is applied at most once per epoch (two applied — not
//       `duplicate` — verdicts, or an applied verdict after its value was read);
//   (f) the issuer never grants one epoch of a scope twice, except a second
//       grant between a restore drill's restore and its reconcile, when the
//       first grant was invoked before that restore finished;
//   (g) the database guard (run.mjs --guard): no write of the rogue writer
//       (rogue.mjs, op `rogue`) lands — each attempt that reached the database
//       is refused with the refusal its invocation expects (`expect`: the error
//       code and the parts of its message); one lost with its connection is
//       left to the final state, where a rogue op id or value (`rogue-N`) is a
//       landed write — and no fenced operation is refused by the guard: a
//       GUARD_REFUSED completion, an error naming the guard (a current-token
//       transaction falsely refused, or fencegate's own fence write refused), or,
//       with a rogue writer about, a fence row that does not decode (CORRUPT_STATE).
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';

export function parseHistory(text) {
  const lines = [];
  text.split('\n').forEach((raw, i) => {
    if (raw.trim() === '') return;
    let o;
    try {
      o = JSON.parse(raw);
    } catch {
      o = { ev: 'garbage', raw };
    }
    o.line = i + 1;
    lines.push(o);
  });
  return lines;
}

const big = (x) => (x === undefined || x === null ? null : BigInt(x));
const show = (l) => {
  const { line, ...rest } = l;
  return `    L${line}: ${JSON.stringify(rest)}`;
};

export function check(lines) {
  const violations = [];
  const violation = (rule, message, ...evidence) => violations.push({ rule, message, lines: evidence.filter(Boolean) });
  const ops = new Map(); // id → { inv, end }
  const drills = [];
  const finals = [];
  const faults = {};
  for (const l of lines) {
    if (l.ev === 'garbage') violation('format', 'a line that is not JSON', l);
    else if (l.ev === 'invoke') ops.set(l.id, { inv: l, end: null });
    else if (l.ev === 'ok' || l.ev === 'unknown' || l.ev === 'fail') {
      const o = ops.get(l.id);
      if (!o) violation('format', `completion of ${l.id} with no invocation`, l);
      else o.end = l;
    } else if (l.ev === 'drill') drills.push(l);
    else if (l.ev === 'final') finals.push(l);
    else if (l.ev === 'fault' && l.kind !== 'sigcont' && l.phase !== 'started') faults[l.kind] = (faults[l.kind] ?? 0) + 1;
  }
  const all = [...ops.values()].map((o) => ({ ...o, start: o.inv.m, done: o.end ? o.end.m : Infinity }));
  const applied = (o) => o.end && o.end.ev === 'ok' && o.end.ok === true && (o.end.outcome === 'advance' || o.end.outcome === 'accept');

  // ---- per key: mark observations, writes, values ----
  const byKey = new Map();
  const K = (k) => {
    if (!byKey.has(k)) byKey.set(k, []);
    return byKey.get(k);
  };
  const isRogue = (id) => typeof id === 'string' && /^rogue-[0-9]+$/.test(id);
  for (const o of all) {
    if (o.inv.op === 'reconcile') {
      if (!o.end) continue;
      for (const c of o.end.changes ?? []) {
        if (c.target === 'resource') K(c.key).push({ ...o, fence: c });
      }
    } else if (['establish', 'write', 'read'].includes(o.inv.op)) K(o.inv.key).push(o);
  }
  for (const f of finals.filter((x) => x.corrupt !== undefined)) {
    violation(lines.some((l) => l.op === 'rogue') ? 'g' : 'c', `${f.key}: the final fence row does not decode: ${f.corrupt}`, f);
  }
  for (const f of finals.filter((x) => x.corrupt === undefined)) K(f.key).push({ inv: f, end: { ...f, ev: 'ok', ok: true }, start: f.m, done: f.m, final: true });

  for (const [key, list] of byKey) {
    // What each completed operation left: the mark is at least `left` from its completion on.
    const left = (o) => {
      if (!o.end || o.end.ev !== 'ok') return null;
      if (o.fence) return big(o.fence.markAfter);
      if (o.inv.op === 'read' || o.final) return big(o.end.mark);
      return big(o.end.markAfter);
    };
    // What each operation saw: the mark at some instant after its invocation.
    const saw = (o) => {
      if (!o.end || o.end.ev !== 'ok' || o.fence) return null;
      if (o.inv.op === 'read' || o.final) return big(o.end.mark);
      return big(o.end.markBefore);
    };
    const byDone = list.filter((o) => left(o) !== null).sort((x, y) => x.done - y.done);
    const byStart = [...list].sort((x, y) => x.start - y.start);
    let i = 0;
    let best = null; // the op with the largest `left` among those completed so far
    for (const o of byStart) {
      while (i < byDone.length && byDone[i].done < o.start) {
        if (best === null || left(byDone[i]) > left(best)) best = byDone[i];
        i += 1;
      }
      if (best === null) continue;
      const M = left(best);
      const s = saw(o);
      if (s !== null && s < M) {
        violation('d', `${key}: mark went back: ${o.final ? 'the final state' : o.inv.op} saw mark ${s} after ${best.fence ? 'reconcile' : best.inv.op} had left it at ${M}`, best.inv, best.end, o.inv.ev === 'invoke' ? o.inv : null, o.end);
      }
      if (o.inv.op === 'write' && applied(o) && big(o.inv.token) < M) {
        violation('a', `${key}: write with token ${o.inv.token} applied after mark ${M} was established`, best.inv, best.end, o.inv, o.end);
      }
    }
    // (a) a verdict that applies a token below the mark it reports
    for (const o of list) {
      if (o.inv.op === 'write' && applied(o) && big(o.end.markBefore) > big(o.inv.token)) {
        violation('a', `${key}: write with token ${o.inv.token} applied over mark ${o.end.markBefore}`, o.inv, o.end);
      }
    }

    // writes by op id
    const writes = new Map(); // opId → attempts
    for (const o of list) {
      if (o.inv.op !== 'write') continue;
      if (!writes.has(o.inv.opId)) writes.set(o.inv.opId, []);
      writes.get(o.inv.opId).push(o);
    }
    // A `duplicate` verdict acknowledges that an earlier attempt of the op id was applied.
    const dup = (o) => o.end && o.end.ev === 'ok' && o.end.ok === true && o.end.outcome === 'duplicate';
    const mayHaveApplied = (o) => applied(o) || dup(o) || !o.end || o.end.ev === 'unknown';
    const latestApply = (attempts) => Math.max(...attempts.filter(mayHaveApplied).map((o) => o.done));
    const acked = list.filter((o) => o.inv.op === 'write' && applied(o)).sort((x, y) => x.start - y.start);
    // suffix[i]: the acknowledged write with the earliest completion among acked[i…]
    const suffix = new Array(acked.length + 1).fill(null);
    for (let j = acked.length - 1; j >= 0; j--) suffix[j] = suffix[j + 1] === null || acked[j].done < suffix[j + 1].done ? acked[j] : suffix[j + 1];
    /** An acknowledged write invoked after `after` and completed before `before`, or undefined. */
    const ackedBetween = (after, before) => {
      let lo = 0;
      let hi = acked.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (acked[mid].start > after) hi = mid;
        else lo = mid + 1;
      }
      const w = suffix[lo];
      return w !== null && w.done < before ? w : undefined;
    };

    // (b) one holder per applied epoch (establish, write, and values seen)
    const holderOf = new Map(); // token → op
    const bind = (token, holder, o) => {
      const t = String(token);
      const first = holderOf.get(t);
      if (!first) holderOf.set(t, { holder, o });
      else if (first.holder !== holder) violation('b', `${key}: epoch ${t} applied for ${first.holder} and for ${holder}`, first.o.inv, first.o.end, o.inv.ev === 'invoke' ? o.inv : null, o.end);
    };
    for (const o of list) {
      if ((o.inv.op === 'establish' || o.inv.op === 'write') && o.end && o.end.ev === 'ok' && o.end.ok === true) bind(o.inv.token, o.inv.holder, o);
      if (o.fence && o.fence.action === 'establish' && o.fence.holder) bind(o.fence.markAfter, o.fence.holder, o);
    }

    // values seen by reads and the final state
    for (const o of list) {
      if (!(o.inv.op === 'read' || o.final) || !o.end || o.end.ev !== 'ok') continue;
      const what = o.final ? 'the final state' : 'a read';
      if (!o.end.hasValue) {
        const lost = ackedBetween(-Infinity, o.start);
        if (lost) violation(o.final ? 'c' : 'd', `${key}: ${what} has no value after write ${lost.inv.opId} was acknowledged`, lost.inv, lost.end, o.inv.ev === 'invoke' ? o.inv : null, o.end);
        continue;
      }
      const v = o.end.value;
      const attempts = v && writes.get(v.w);
      if (!attempts) {
        if (v && isRogue(v.w)) violation('g', `${key}: ${what} holds the value of ${v.w}: a write of the rogue writer landed`, o.inv.ev === 'invoke' ? o.inv : null, o.end);
        else violation(o.final ? 'c' : 'd', `${key}: ${what} holds a value no write of this key carried`, o.inv.ev === 'invoke' ? o.inv : null, o.end);
        continue;
      }
      if (!attempts.some(mayHaveApplied)) {
        violation('d', `${key}: ${what} holds the value of write ${v.w}, which was refused or failed on every attempt`, ...attempts.flatMap((w) => [w.inv, w.end]), o.inv.ev === 'invoke' ? o.inv : null, o.end);
        continue;
      }
      bind(v.token, v.holder, o);
      const by = latestApply(attempts);
      const newer = ackedBetween(by, o.start); // attempts of v.w itself all started before `by`
      if (newer) {
        violation(o.final ? 'c' : 'd', `${key}: ${what} holds write ${v.w}, overwritten by write ${newer.inv.opId} acknowledged before it was read`, ...attempts.flatMap((w) => [w.inv, w.end]), newer.inv, newer.end, o.inv.ev === 'invoke' ? o.inv : null, o.end);
      }
      if (o.final && big(v.token) > big(o.end.mark)) violation('c', `${key}: final value has token ${v.token} above the final mark ${o.end.mark}`, o.end);
      // (e) applied again after its value was already read
      if (!o.final) {
        const again = attempts.find((w) => applied(w) && w.start > o.done);
        if (again) violation('e', `${key}: write ${v.w} applied again after its value was read`, o.inv, o.end, again.inv, again.end);
      }
    }
    // own data (run.mjs --own-data): the caller's log holds each op id at most once, and only op ids that may have applied
    for (const f of list.filter((o) => o.final && Array.isArray(o.end.ownLog))) {
      const counts = new Map();
      for (const id of f.end.ownLog) counts.set(id, (counts.get(id) ?? 0) + 1);
      for (const [id, n] of counts) {
        const attempts = writes.get(id);
        if (n > 1) violation('e', `${key}: the caller's table holds op id ${id} ${n} times`, f.end);
        if (!attempts && isRogue(id)) violation('g', `${key}: the caller's table holds op id ${id}: a write of the rogue writer landed`, f.end);
        else if (!attempts) violation('c', `${key}: the caller's table holds op id ${id}, which no write of this key carried`, f.end);
        else if (!attempts.some(mayHaveApplied)) violation('d', `${key}: the caller's table holds op id ${id}, refused or failed on every attempt`, ...attempts.flatMap((w) => [w.inv, w.end]), f.end);
      }
      for (const o of acked) if (!counts.has(o.inv.opId)) violation('c', `${key}: acknowledged write ${o.inv.opId} is not in the caller's table`, o.inv, o.end, f.end);
    }
    // (e) two applied verdicts for one op id and epoch
    for (const [opId, attempts] of writes) {
      const ap = attempts.filter(applied);
      if (ap.length > 1) violation('e', `${key}: op id ${opId} applied ${ap.length} times in epoch ${ap[0].inv.token}`, ...ap.flatMap((w) => [w.inv, w.end]));
    }
  }

  // ---- (f) issuer grants ----
  const windows = [];
  let open = null;
  for (const d of drills) {
    if (d.phase === 'restoring') open = { restoring: d.m, restore: Infinity, reconciled: Infinity, line: d };
    else if (d.phase === 'restore' && open) open.restore = d.m;
    else if (d.phase === 'reconciled' && open) {
      open.reconciled = d.m;
      windows.push(open);
      open = null;
    }
  }
  if (open) windows.push(open);
  const grants = new Map(); // scope/epoch → [op]
  let reissued = 0; // second grants inside a drill: what the restore drill exercised
  for (const o of all) {
    if (o.inv.op !== 'acquire' || !o.end || o.end.ev !== 'ok' || o.end.ok !== true || o.end.replayed) continue;
    const k = `${o.inv.key}/${o.end.epoch}`;
    if (!grants.has(k)) grants.set(k, []);
    grants.get(k).push(o);
  }
  for (const [k, list] of grants) {
    list.sort((x, y) => x.start - y.start);
    for (let j = 1; j < list.length; j++) {
      const first = list[0];
      const second = list[j];
      if (second.end.holder === first.end.holder && second.inv.requestId === first.inv.requestId) continue; // a replay
      // either grant may be the later one to commit (a grant invoked first can commit last, e.g.
      // paused between its read and its compare-and-set): the pair is the drill's when one of them
      // was invoked before the restore finished and the other may have committed after it began
      const inDrill = (a, b) => windows.find((w) => a.start < w.restore && b.done > w.restoring && b.start < w.reconciled);
      const across = inDrill(first, second) ?? inDrill(second, first);
      if (across) reissued += 1;
      else {
        violation('f', `${k.replace('/', ': epoch ')} granted to ${first.end.holder} and again to ${second.end.holder}${windows.length ? ' outside a restore drill' : ''}`, first.inv, first.end, second.inv, second.end);
      }
    }
  }

  // ---- (g) the database guard ----
  const rogue = { attempts: 0, refused: 0, landed: 0, lost: 0, byKind: {} };
  for (const o of all) {
    if (o.inv.op !== 'rogue') continue;
    rogue.attempts += 1;
    const k = (rogue.byKind[o.inv.kind] ??= { attempts: 0, refused: 0, landed: 0, lost: 0 });
    k.attempts += 1;
    const e = o.end;
    const ex = o.inv.expect;
    let outcome;
    if (!e) outcome = 'lost'; // stopped mid-attempt: left to the final state
    else if (e.ev === 'ok' && e.rows === 0) outcome = 'refused'; // nothing changed (SQLite's guard ignores an insert over an existing fence row)
    else if (e.ev === 'ok') {
      outcome = 'landed';
      // rows: what the statement changed (null when the engine does not count: TRUNCATE on PostgreSQL)
      violation('g', `the rogue writer's ${o.inv.kind} on ${o.inv.table} (${o.inv.key}) landed: ${typeof e.rows === 'number' ? `${e.rows} row(s) changed` : 'it ran'} with no fence`, o.inv, e);
    } else if (ex && e.code === ex.code && ex.text.every((t) => typeof e.message === 'string' && e.message.includes(t))) outcome = 'refused';
    else if (e.lost === true) outcome = 'lost';
    else {
      outcome = 'other';
      violation('g', `the rogue writer's ${o.inv.kind} on ${o.inv.table} (${o.inv.key}) failed with ${e.code}, not the guard's refusal ${ex ? ex.code : '(none expected)'}: it did not test the guard`, o.inv, e);
    }
    if (outcome !== 'other') {
      rogue[outcome] += 1;
      k[outcome] += 1;
    }
  }
  const guardError = (l) => l.code === 'GUARD_REFUSED' || /fencegate guard|FG00[12]/.test(`${l.why ?? ''} ${l.code ?? ''}`);
  for (const o of all) {
    const e = o.end;
    if (!e || o.inv.op === 'rogue') continue;
    if (o.inv.op === 'reconcile') {
      if (/fencegate guard|FG00[12]|GUARD_REFUSED/.test(JSON.stringify(e.errors ?? []))) violation('g', 'the restore drill\'s reconcile was refused by the guard', o.inv, e);
    } else if ((e.ev === 'fail' || e.ev === 'unknown') && guardError(e)) {
      violation('g', `${o.inv.key}: a fenced ${o.inv.op} was refused by the database guard (${e.code})`, o.inv, e);
    } else if (rogue.attempts > 0 && e.ev === 'fail' && e.code === 'CORRUPT_STATE' && ['establish', 'write', 'read'].includes(o.inv.op)) {
      violation('g', `${o.inv.key}: the fence row does not decode (CORRUPT_STATE) while the rogue writer runs: a state it wrote landed?`, o.inv, e);
    }
  }

  // ---- counts ----
  const verdicts = { acknowledged: 0, rejected: 0, unknown: 0, failed: 0 };
  const byOp = {};
  for (const o of all) {
    if (o.inv.op === 'reconcile' || o.inv.op === 'rogue') continue;
    const kind = !o.end || o.end.ev === 'unknown' ? 'unknown' : o.end.ev === 'fail' ? 'failed' : o.end.ok !== false ? 'acknowledged' : 'rejected';
    verdicts[kind] += 1;
    byOp[o.inv.op] ??= { acknowledged: 0, rejected: 0, unknown: 0, failed: 0 };
    byOp[o.inv.op][kind] += 1;
  }
  return {
    violations,
    stats: { completed: all.filter((o) => o.inv.op !== 'reconcile' && o.inv.op !== 'rogue').length, verdicts, byOp, faults, drills: windows.length, reissuedInDrills: reissued, keys: finals.length, rogue },
  };
}

export function checkFile(file) {
  return check(parseHistory(fs.readFileSync(file, 'utf8')));
}

export function formatReport({ violations, stats }) {
  const out = [];
  out.push(`check: ${stats.completed} operations (${Object.entries(stats.verdicts).map(([k, v]) => `${k} ${v}`).join(', ')}), faults ${JSON.stringify(stats.faults)}, restore drills ${stats.drills} (epochs granted again inside them: ${stats.reissuedInDrills})`);
  for (const [op, c] of Object.entries(stats.byOp)) out.push(`check:   ${op.padEnd(9)} ${Object.entries(c).map(([k, v]) => `${k} ${v}`).join(', ')}`);
  if (stats.rogue && stats.rogue.attempts > 0) {
    const r = stats.rogue;
    out.push(`check: rogue writer: ${r.attempts} attempts, refused ${r.refused}, landed ${r.landed}, lost with the connection ${r.lost}`);
    for (const [kind, c] of Object.entries(r.byKind).sort()) out.push(`check:   ${kind.padEnd(16)} ${Object.entries(c).map(([k, v]) => `${k} ${v}`).join(', ')}`);
  }
  const shown = violations.slice(0, 50);
  for (const v of shown) {
    out.push(`VIOLATION (${v.rule}) ${v.message}`);
    for (const l of v.lines) out.push(show(l));
  }
  if (violations.length > shown.length) out.push(`… and ${violations.length - shown.length} more`);
  const byRule = {};
  for (const v of violations) byRule[v.rule] = (byRule[v.rule] ?? 0) + 1;
  out.push(`check: ${violations.length} violation(s)${violations.length ? ` ${JSON.stringify(byRule)}` : ''}`);
  return out.join('\n');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === fs.realpathSync(process.argv[1])) {
  const file = process.argv[2];
  if (!file) {
    console.error('usage: node tests/history/check.mjs HISTORY.jsonl');
    process.exit(2);
  }
  const result = checkFile(file);
  console.log(formatReport(result));
  process.exitCode = result.violations.length > 0 ? 1 : 0;
}
