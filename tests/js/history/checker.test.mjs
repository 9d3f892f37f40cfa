// The history checker (tests/history/check.mjs) on small hand-written
// histories: a clean one passes; each of the rules (a)–(g) reports its
// violation with the lines that show it.
import test from 'node:test';
import assert from 'node:assert/strict';
import { check, parseHistory, formatReport } from '../../history/check.mjs';

// A tiny history builder: every call appends one line, `m` counts up by 10 µs.
function history() {
  const lines = [];
  let m = 0;
  const add = (o) => lines.push({ ...o, m: (m += 10), t: 0 });
  return {
    lines,
    inv: (id, op, f) => add({ ev: 'invoke', id, op, ...f }),
    ok: (id, op, f) => add({ ev: 'ok', id, op, ...f }),
    unknown: (id, op, f) => add({ ev: 'unknown', id, op, code: 'COMMIT_UNKNOWN', ...f }),
    final: (key, f) => add({ ev: 'final', key, ...f }),
    drill: (phase) => add({ ev: 'drill', phase }),
    add,
    text: () => lines.map((l) => JSON.stringify(l)).join('\n'),
  };
}
const val = (w, key, token, holder) => ({ w, key, token, holder });
const run = (h) => check(parseHistory(h.text()));
const rules = (r) => r.violations.map((v) => v.rule);
const lineNos = (v) => v.lines.map((l) => l.line);

/** `h`'s only violation is of `rule`, with `message`, shown by the history lines `lines` (when given). */
function onlyViolation(h, rule, message, lines) {
  const r = run(h);
  assert.deepEqual(rules(r), [rule]);
  assert.equal(r.violations[0].message, message);
  if (lines !== undefined) assert.deepEqual(lineNos(r.violations[0]), lines);
}

/** A holder A acquires epoch 1 of k, establishes it, writes x; B then takes epoch 2 and writes y. */
function clean() {
  const h = history();
  h.inv('a1', 'acquire', { key: 'k', holder: 'A', requestId: 'ra' });
  h.ok('a1', 'acquire', { key: 'k', ok: true, epoch: 1, holder: 'A' });
  h.inv('a2', 'establish', { key: 'k', holder: 'A', token: 1 });
  h.ok('a2', 'establish', { key: 'k', ok: true, outcome: 'advance', markBefore: 0, markAfter: 1 });
  h.inv('a3', 'write', { key: 'k', holder: 'A', token: 1, opId: 'x' });
  h.ok('a3', 'write', { key: 'k', ok: true, outcome: 'accept', markBefore: 1, markAfter: 1 });
  h.inv('b1', 'acquire', { key: 'k', holder: 'B', requestId: 'rb' });
  h.ok('b1', 'acquire', { key: 'k', ok: true, epoch: 2, holder: 'B' });
  h.inv('b2', 'establish', { key: 'k', holder: 'B', token: 2 });
  h.ok('b2', 'establish', { key: 'k', ok: true, outcome: 'advance', markBefore: 1, markAfter: 2 });
  return h;
}

test('a clean history: no violation, counts by kind', () => {
  const h = clean();
  h.inv('a4', 'write', { key: 'k', holder: 'A', token: 1, opId: 'z' }); // the zombie, refused
  h.ok('a4', 'write', { key: 'k', ok: false, outcome: 'reject', code: 'STALE_TOKEN', markBefore: 2, markAfter: 2 });
  h.inv('b3', 'write', { key: 'k', holder: 'B', token: 2, opId: 'y' });
  h.unknown('b3', 'write', { key: 'k' });
  h.inv('b4', 'write', { key: 'k', holder: 'B', token: 2, opId: 'y' }); // the retry: a duplicate
  h.ok('b4', 'write', { key: 'k', ok: true, outcome: 'duplicate', markBefore: 2, markAfter: 2 });
  h.inv('r', 'read', { key: 'k' });
  h.ok('r', 'read', { key: 'k', ok: true, mark: 2, hasValue: true, value: val('y', 'k', 2, 'B') });
  h.final('k', { mark: 2, hasValue: true, value: val('y', 'k', 2, 'B') });
  const r = run(h);
  assert.deepEqual(r.violations, []);
  assert.deepEqual(r.stats.verdicts, { acknowledged: 7, rejected: 1, unknown: 1, failed: 0 });
  assert.match(formatReport(r), /check: 0 violation\(s\)$/);
});

test('(a) a write applied with a token below an established mark; (d) the mark it saw went back', () => {
  const h = clean();
  h.inv('a4', 'write', { key: 'k', holder: 'A', token: 1, opId: 'z' }); // a host that ignored the version
  h.ok('a4', 'write', { key: 'k', ok: true, outcome: 'accept', markBefore: 1, markAfter: 1 });
  const r = run(h);
  assert.deepEqual(rules(r), ['d', 'a']);
  assert.equal(r.violations[1].message, 'k: write with token 1 applied after mark 2 was established');
  assert.deepEqual(lineNos(r.violations[1]), [9, 10, 11, 12]);
  assert.equal(r.violations[0].message, 'k: mark went back: write saw mark 1 after establish had left it at 2');
});

test('(a) a verdict that applies a token below the mark it reports', () => {
  const h = history();
  h.inv('w', 'write', { key: 'k', holder: 'A', token: 1, opId: 'x' });
  h.ok('w', 'write', { key: 'k', ok: true, outcome: 'accept', markBefore: 3, markAfter: 3 });
  onlyViolation(h, 'a', 'k: write with token 1 applied over mark 3', [1, 2]);
});

test('(b) one epoch applied for two holders', () => {
  const h = clean();
  h.inv('c1', 'establish', { key: 'k', holder: 'C', token: 2 });
  h.ok('c1', 'establish', { key: 'k', ok: true, outcome: 'accept', markBefore: 2, markAfter: 2 });
  onlyViolation(h, 'b', 'k: epoch 2 applied for B and for C', [9, 10, 11, 12]);
});

test('(c) the final value is a write overwritten by a later acknowledged one; no value after an acknowledged write', () => {
  const h = clean();
  h.inv('b3', 'write', { key: 'k', holder: 'B', token: 2, opId: 'y' });
  h.ok('b3', 'write', { key: 'k', ok: true, outcome: 'accept', markBefore: 2, markAfter: 2 });
  h.final('k', { mark: 2, hasValue: true, value: val('x', 'k', 1, 'A') });
  onlyViolation(h, 'c', 'k: the final state holds write x, overwritten by write y acknowledged before it was read', [5, 6, 11, 12, 13]);

  const g = clean();
  g.final('k', { mark: 2, hasValue: false });
  onlyViolation(g, 'c', 'k: the final state has no value after write x was acknowledged');
});

test('(c) a COMMIT_UNKNOWN write whose value is final is proven applied: no violation; a value no write carried is one', () => {
  const h = clean();
  h.inv('b3', 'write', { key: 'k', holder: 'B', token: 2, opId: 'y' });
  h.unknown('b3', 'write', { key: 'k' });
  h.final('k', { mark: 2, hasValue: true, value: val('y', 'k', 2, 'B') });
  assert.deepEqual(run(h).violations, []);
  const g = clean();
  g.final('k', { mark: 2, hasValue: true, value: val('nobody', 'k', 2, 'B') });
  onlyViolation(g, 'c', 'k: the final state holds a value no write of this key carried');
});

test('(d) a refused write left a trace; a read sees an overwritten value; a read sees the mark go back', () => {
  let h = clean();
  h.inv('a4', 'write', { key: 'k', holder: 'A', token: 1, opId: 'z' });
  h.ok('a4', 'write', { key: 'k', ok: false, outcome: 'reject', code: 'STALE_TOKEN', markBefore: 2, markAfter: 2 });
  h.inv('r', 'read', { key: 'k' });
  h.ok('r', 'read', { key: 'k', ok: true, mark: 2, hasValue: true, value: val('z', 'k', 1, 'A') });
  onlyViolation(h, 'd', 'k: a read holds the value of write z, which was refused or failed on every attempt', [11, 12, 13, 14]);

  h = clean();
  h.inv('b3', 'write', { key: 'k', holder: 'B', token: 2, opId: 'y' });
  h.ok('b3', 'write', { key: 'k', ok: true, outcome: 'accept', markBefore: 2, markAfter: 2 });
  h.inv('r', 'read', { key: 'k' });
  h.ok('r', 'read', { key: 'k', ok: true, mark: 2, hasValue: true, value: val('x', 'k', 1, 'A') });
  onlyViolation(h, 'd', 'k: a read holds write x, overwritten by write y acknowledged before it was read');

  h = clean();
  h.inv('r', 'read', { key: 'k' });
  h.ok('r', 'read', { key: 'k', ok: true, mark: 1, hasValue: true, value: val('x', 'k', 1, 'A') });
  onlyViolation(h, 'd', 'k: mark went back: read saw mark 1 after establish had left it at 2', [9, 10, 11, 12]);
});

test('(e) an op id applied twice in one epoch; applied again after its value was read', () => {
  let h = clean();
  h.inv('a4', 'write', { key: 'k', holder: 'A', token: 1, opId: 'x' });
  h.ok('a4', 'write', { key: 'k', ok: true, outcome: 'accept', markBefore: 1, markAfter: 1 });
  const r = run(h);
  assert.ok(rules(r).includes('e'));
  const e = r.violations.find((v) => v.rule === 'e');
  assert.equal(e.message, 'k: op id x applied 2 times in epoch 1');
  assert.deepEqual(lineNos(e), [5, 6, 11, 12]);

  h = history();
  h.inv('w1', 'write', { key: 'k', holder: 'A', token: 1, opId: 'x' });
  h.unknown('w1', 'write', { key: 'k' });
  h.inv('r', 'read', { key: 'k' });
  h.ok('r', 'read', { key: 'k', ok: true, mark: 1, hasValue: true, value: val('x', 'k', 1, 'A') });
  h.inv('w2', 'write', { key: 'k', holder: 'A', token: 1, opId: 'x' });
  h.ok('w2', 'write', { key: 'k', ok: true, outcome: 'accept', markBefore: 1, markAfter: 1 });
  onlyViolation(h, 'e', 'k: write x applied again after its value was read', [3, 4, 5, 6]);
});

test('(f) an epoch granted twice: a violation, except inside a restore drill for a grant made before the restore', () => {
  const grants = (h, inDrill) => {
    h.inv('g1', 'acquire', { key: 'k', holder: 'A', requestId: 'ra' });
    h.ok('g1', 'acquire', { key: 'k', ok: true, epoch: 5, holder: 'A' });
    if (inDrill) {
      h.drill('restoring');
      h.drill('restore');
    }
    h.inv('g2', 'acquire', { key: 'k', holder: 'B', requestId: 'rb' });
    h.ok('g2', 'acquire', { key: 'k', ok: true, epoch: 5, holder: 'B' });
    if (inDrill) h.drill('reconciled');
    // a replay of g1's request is no second grant
    h.inv('g3', 'acquire', { key: 'k', holder: 'A', requestId: 'ra' });
    h.ok('g3', 'acquire', { key: 'k', ok: true, epoch: 5, holder: 'A', replayed: true });
  };
  let h = history();
  grants(h, false);
  onlyViolation(h, 'f', 'k: epoch 5 granted to A and again to B', [1, 2, 3, 4]);

  h = history();
  grants(h, true);
  assert.deepEqual(run(h).violations, []);

  // after the drill's reconcile, a second grant is a violation again
  h = history();
  h.inv('g1', 'acquire', { key: 'k', holder: 'A', requestId: 'ra' });
  h.ok('g1', 'acquire', { key: 'k', ok: true, epoch: 5, holder: 'A' });
  h.drill('restoring');
  h.drill('restore');
  h.drill('reconciled');
  h.inv('g2', 'acquire', { key: 'k', holder: 'B', requestId: 'rb' });
  h.ok('g2', 'acquire', { key: 'k', ok: true, epoch: 5, holder: 'B' });
  onlyViolation(h, 'f', 'k: epoch 5 granted to A and again to B outside a restore drill');

  // the grant invoked first commits last: A reads the record and pauses, B is granted epoch 5
  // before the restore, the restore rewinds the record, and A's compare-and-set lands on it
  // (a run of tests/history/run.mjs --own-data under SIGSTOP): the drill's second grant
  h = history();
  h.inv('g1', 'acquire', { key: 'k', holder: 'A', requestId: 'ra' });
  h.inv('g2', 'acquire', { key: 'k', holder: 'B', requestId: 'rb' });
  h.ok('g2', 'acquire', { key: 'k', ok: true, epoch: 5, holder: 'B' });
  h.drill('restoring');
  h.drill('restore');
  h.ok('g1', 'acquire', { key: 'k', ok: true, epoch: 5, holder: 'A' });
  h.drill('reconciled');
  assert.deepEqual(run(h).violations, []);
  // the same pair with A done before the restore began: no restore between them, a violation
  h = history();
  h.inv('g1', 'acquire', { key: 'k', holder: 'A', requestId: 'ra' });
  h.inv('g2', 'acquire', { key: 'k', holder: 'B', requestId: 'rb' });
  h.ok('g2', 'acquire', { key: 'k', ok: true, epoch: 5, holder: 'B' });
  h.ok('g1', 'acquire', { key: 'k', ok: true, epoch: 5, holder: 'A' });
  h.drill('restoring');
  h.drill('restore');
  h.drill('reconciled');
  onlyViolation(h, 'f', 'k: epoch 5 granted to A and again to B outside a restore drill');
});

test('a line that is not JSON and a completion with no invocation are reported', () => {
  const r = check(parseHistory('{"ev":"ok","id":"nope","op":"read","m":1}\nnot json\n'));
  assert.deepEqual(rules(r), ['format', 'format']);
  assert.deepEqual(r.violations.map((v) => v.lines[0].line), [1, 2]);
});

test('own data (--own-data): the caller\'s log holds each applied op id once; twice, a refused one, or a missing acknowledged one is a violation', () => {
  const base = () => {
    const h = clean();
    h.inv('b3', 'write', { key: 'k', holder: 'B', token: 2, opId: 'y' });
    h.ok('b3', 'write', { key: 'k', ok: true, outcome: 'accept', markBefore: 2, markAfter: 2 });
    h.inv('a4', 'write', { key: 'k', holder: 'A', token: 1, opId: 'z' });
    h.ok('a4', 'write', { key: 'k', ok: false, outcome: 'reject', code: 'STALE_TOKEN', markBefore: 2, markAfter: 2 });
    return h;
  };
  let h = base();
  h.final('k', { mark: 2, hasValue: true, value: val('y', 'k', 2, 'B'), ownLog: ['x', 'y'] });
  assert.deepEqual(run(h).violations, []);
  h = base();
  h.final('k', { mark: 2, hasValue: true, value: val('y', 'k', 2, 'B'), ownLog: ['x', 'y', 'y'] });
  onlyViolation(h, 'e', "k: the caller's table holds op id y 2 times");
  h = base();
  h.final('k', { mark: 2, hasValue: true, value: val('y', 'k', 2, 'B'), ownLog: ['x', 'y', 'z'] });
  onlyViolation(h, 'd', "k: the caller's table holds op id z, refused or failed on every attempt");
  h = base();
  h.final('k', { mark: 2, hasValue: true, value: val('y', 'k', 2, 'B'), ownLog: ['y'] });
  onlyViolation(h, 'c', "k: acknowledged write x is not in the caller's table");
});

test('(g) the guard (--guard): the rogue writer\'s attempts refused as expected or lost pass; one that landed, one refused by something else, a rogue op id or value in the final state, a fenced write refused by the guard are violations', () => {
  const expect = { code: 'FG001', text: ['fencegate guard: UPDATE on items refused', ' key k '] };
  const base = () => {
    const h = clean();
    h.inv('rogue.1', 'rogue', { p: -2, kind: 'items-update', key: 'k', table: 'items', expect });
    h.add({ ev: 'fail', id: 'rogue.1', op: 'rogue', code: 'FG001', message: 'fencegate guard: UPDATE on items refused: this transaction did not pass the fence for key k (its fence row was not written by this transaction)' });
    h.inv('rogue.2', 'rogue', { p: -2, kind: 'items-update', key: 'k', table: 'items', expect });
    h.add({ ev: 'fail', id: 'rogue.2', op: 'rogue', code: 'ECONNRESET', message: 'read ECONNRESET', lost: true });
    h.inv('rogue.3', 'rogue', { p: -2, kind: 'items-update', key: 'k', table: 'items', expect }); // no completion: stopped mid-attempt
    return h;
  };
  const fin = { mark: 2, hasValue: true, value: val('x', 'k', 1, 'A'), ownLog: ['x'] };
  let h = base();
  h.final('k', fin);
  let r = run(h);
  assert.deepEqual(r.violations, []);
  assert.deepEqual(r.stats.rogue, { attempts: 3, refused: 1, landed: 0, lost: 2, byKind: { 'items-update': { attempts: 3, refused: 1, landed: 0, lost: 2 } } });
  assert.equal(r.stats.completed, 5); // the rogue's attempts are not client operations
  assert.match(formatReport(r), /check: rogue writer: 3 attempts, refused 1, landed 0, lost with the connection 2/);

  h = base();
  h.inv('rogue.4', 'rogue', { p: -2, kind: 'items-update', key: 'k', table: 'items', expect });
  h.ok('rogue.4', 'rogue', { rows: 1 });
  h.final('k', fin);
  r = run(h);
  onlyViolation(h, 'g', "the rogue writer's items-update on items (k) landed: 1 row(s) changed with no fence", [16, 17]);
  assert.equal(r.stats.rogue.landed, 1);

  h = base(); // the right code with another message (a refusal of another rule) does not count as the guard's
  h.inv('rogue.4', 'rogue', { p: -2, kind: 'items-update', key: 'k', table: 'items', expect });
  h.add({ ev: 'fail', id: 'rogue.4', op: 'rogue', code: '42601', message: 'syntax error at or near "UPDAT"' });
  h.final('k', fin);
  onlyViolation(h, 'g', "the rogue writer's items-update on items (k) failed with 42601, not the guard's refusal FG001: it did not test the guard");

  h = base();
  h.final('k', { ...fin, ownLog: ['x', 'rogue-7'] });
  onlyViolation(h, 'g', "k: the caller's table holds op id rogue-7: a write of the rogue writer landed");
  h = base();
  h.final('k', { ...fin, value: val('rogue-7', 'k', '0', 'rogue') });
  onlyViolation(h, 'g', 'k: the final state holds the value of rogue-7: a write of the rogue writer landed');

  h = base(); // a current-token transaction refused by the guard: a false refusal
  h.inv('b3', 'write', { key: 'k', holder: 'B', token: 2, opId: 'y' });
  h.add({ ev: 'fail', id: 'b3', op: 'write', key: 'k', code: 'GUARD_REFUSED', why: 'FencegateError: the database\'s guard refused a statement' });
  h.final('k', fin);
  onlyViolation(h, 'g', 'k: a fenced write was refused by the database guard (GUARD_REFUSED)');
  h = base(); // fencegate's own fence write refused (a STORE_ERROR naming the guard)
  h.inv('b3', 'establish', { key: 'k', holder: 'B', token: 3 });
  h.add({ ev: 'fail', id: 'b3', op: 'establish', key: 'k', code: 'STORE_ERROR', why: 'DatabaseError: fencegate guard: fence row k: the new state refused: not JSON' });
  h.final('k', fin);
  onlyViolation(h, 'g', 'k: a fenced establish was refused by the database guard (STORE_ERROR)');
  h = base(); // a fence row that does not decode, at the end
  h.final('k', { corrupt: 'CORRUPT_STATE: the stored state of "k" is not JSON' });
  onlyViolation(h, 'g', 'k: the final fence row does not decode: CORRUPT_STATE: the stored state of "k" is not JSON');
});
