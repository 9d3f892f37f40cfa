// Property 2 (issue 19): MemoryGate, and Gate over each in-process store, agree
// step by step with a small reference model of the documented rules (README
// "Same-epoch semantics", docs/restore.md), verdicts, marks, values and the
// persisted state included. The state is compared through the public API
// (decodeState, inspect), never by its text, so the model holds for any state
// format. Operation ids stay below the window, so the Bloom filter of evicted
// ids (probabilistic by design) never answers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { MemoryGate, Gate, MemoryHostStore, decodeState } from '../../../pkg/node.mjs';
import { params } from './config.mjs';

const KEYS = ['a', 'b', '1'];
const HOLDERS = [undefined, 'h1', 'h2'];
const OP_IDS = [undefined, 'o1', 'o2', '3', '10'];
const BAD_TOKENS = [[undefined, 'MISSING_TOKEN'], [null, 'MISSING_TOKEN'], [0, 'MALFORMED_TOKEN'], [-1, 'MALFORMED_TOKEN'], [1.5, 'MALFORMED_TOKEN'], ['3', 'MALFORMED_TOKEN']];

/** The reference model: one record per key, the documented rules, nothing else. */
class Model {
  constructor(strict) {
    this.strict = strict;
    this.keys = new Map();
  }

  rec(key) {
    return this.keys.get(key) ?? { exists: false, mark: 0, quarantine: null, holder: null, ops: new Map(), hasValue: false, value: undefined };
  }

  /** kind: 'write' | 'establish' | 'delete'. Returns the expected verdict. */
  apply(kind, key, token, value, holder, opId) {
    const r = this.rec(key);
    const mark = r.mark;
    const v = (outcome, code, after = mark, extra = {}) => ({ key, ok: code === null, outcome, code, token: typeof token === 'bigint' ? Number(token) : token, markBefore: mark, markAfter: after, ...extra });
    const bad = BAD_TOKENS.find(([t]) => Object.is(t, token));
    if (bad) return { ...v('reject', bad[1]), token: null };
    const t = Number(token);
    if (r.quarantine !== null && t <= r.quarantine) return v('reject', 'QUARANTINED');
    const id = kind === 'establish' ? undefined : opId;
    if (t > mark) {
      const next = { ...r, exists: true, mark: t, quarantine: null, holder: holder ?? null, ops: new Map(id === undefined ? [] : [[id, mark]]) };
      this.change(next, kind, value);
      return v('advance', null, t);
    }
    if (t < mark) return v('reject', 'STALE_TOKEN');
    const strictRefusal = this.strict && kind !== 'establish';
    if (r.holder !== null && holder !== undefined && r.holder !== holder) return v('reject', 'EPOCH_CONFLICT');
    if (id !== undefined && r.ops.has(id)) {
      return { ...v('duplicate', null), original: r.ops.get(id) < t ? 'advance' : 'accept' };
    }
    if (strictRefusal) return v('reject', 'SAME_EPOCH_REJECTED');
    const next = { ...r, exists: true, holder: r.holder ?? holder ?? null, ops: new Map(r.ops) };
    if (id !== undefined) next.ops.set(id, mark);
    this.change(next, kind, value);
    return v('accept', null);
  }

  change(next, kind, value) {
    if (kind === 'write') Object.assign(next, { hasValue: true, value });
    else if (kind === 'delete') Object.assign(next, { hasValue: false, value: undefined });
    this.keys.set(next.key ?? this.current, next);
  }

  quarantine(key, floor) {
    const r = this.rec(key);
    const f = Math.max(floor, r.mark, r.quarantine ?? 0);
    const markBefore = r.mark;
    if (r.quarantine === f && r.mark === f) return { key, ok: true, changed: false, floor: f, markBefore, markAfter: f };
    const next = { ...r, exists: true, quarantine: f };
    if (f > r.mark) Object.assign(next, { mark: f, holder: null, ops: new Map() });
    this.keys.set(key, next);
    return { key, ok: true, changed: true, floor: f, markBefore, markAfter: f };
  }
}

/**
 * Inputs both gates must refuse alike (issue 32 items 8, 9, 12, 13, 18):
 * INVALID_ARGUMENT whatever the token, nothing changed. Each is a call on
 * (gate, key, token).
 */
const REFUSED = [
  ['write undefined', (g, k, t) => g.write(k, t, undefined)],
  ['write undefined with an op id', (g, k, t) => g.write(k, t, undefined, { opId: 'o1' })],
  ['establish with an op id', (g, k, t) => g.establish(k, t, { opId: 'o1' })],
  ['write with array options', (g, k, t) => g.write(k, t, 1, [])],
  ['write with Map options', (g, k, t) => g.write(k, t, 1, new Map([['opId', 'o1']]))],
  ['establish with Date options', (g, k, t) => g.establish(k, t, new Date(0))],
  ['write to the empty key', (g, k, t) => g.write('', t, 1)],
  ['establish the issuer: key', (g, k, t) => g.establish(`issuer:${k}`, t)],
];

const tokenArb = fc.oneof(
  { weight: 8, arbitrary: fc.integer({ min: 1, max: 6 }) },
  { weight: 1, arbitrary: fc.bigInt({ min: 1n, max: 6n }) },
  { weight: 1, arbitrary: fc.constantFrom(...BAD_TOKENS.map(([t]) => t)) },
);
const stepArb = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('write'), key: fc.constantFrom(...KEYS), token: tokenArb, value: fc.integer({ min: 0, max: 99 }), holder: fc.constantFrom(...HOLDERS), opId: fc.constantFrom(...OP_IDS) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('establish'), key: fc.constantFrom(...KEYS), token: tokenArb, holder: fc.constantFrom(...HOLDERS) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('delete'), key: fc.constantFrom(...KEYS), token: tokenArb, holder: fc.constantFrom(...HOLDERS), opId: fc.constantFrom(...OP_IDS) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('quarantine'), key: fc.constantFrom(...KEYS), floor: fc.integer({ min: 0, max: 6 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('refused'), key: fc.constantFrom(...KEYS), token: tokenArb, input: fc.integer({ min: 0, max: REFUSED.length - 1 }) }) },
);

const clone = (v) => (v === undefined ? undefined : structuredClone(v));

/** A transaction-shaped host that keeps the state as an object (like a jsonb column or a Durable Object). */
class ObjectTxStore {
  entries = new Map();
  load(key) {
    const e = this.entries.get(key);
    return e === undefined ? null : { state: clone(e.state), version: e.version, value: clone(e.value) };
  }
  transaction(key, fn) {
    const e = this.entries.get(key);
    const out = fn(e === undefined ? null : clone(e.state));
    if (out === null) return;
    const next = { state: clone(out.nextState), version: (e?.version ?? 0) + 1, value: e?.value };
    if (out.change.kind === 'set') next.value = clone(out.change.value);
    else if (out.change.kind === 'delete') next.value = undefined;
    this.entries.set(key, next);
  }
}

/** Compare-and-set over MemoryHostStore whose commits are lost (return false) as the schedule says: the gate must retry. */
class LossyCasStore extends MemoryHostStore {
  constructor(losses) {
    super();
    this.losses = losses;
    this.n = 0;
  }
  commit(key, expected, state, change) {
    if (this.losses[this.n++ % this.losses.length]) return false;
    return super.commit(key, expected, state, change);
  }
}

/** The persisted state as the model sees it, decoded through the public API (format-agnostic). */
function persisted(state) {
  if (state === undefined || state === null) return { exists: false };
  const d = decodeState(state);
  return { exists: true, mark: d.mark, holder: d.holder ?? null, opIds: [...(d.opIds ?? [])].sort(), quarantine: d.quarantine ?? null };
}
function modelPersisted(r) {
  if (!r.exists) return { exists: false };
  return { exists: true, mark: r.mark, holder: r.holder, opIds: [...r.ops.keys()].sort(), quarantine: r.quarantine };
}

async function run(gate, step, isMemory) {
  const meta = step.holder === undefined && step.opId === undefined ? undefined : { holder: step.holder, opId: step.opId };
  switch (step.kind) {
    case 'write':
      return gate.write(step.key, step.token, step.value, meta);
    case 'establish':
      return gate.establish(step.key, step.token, step.holder === undefined ? undefined : { holder: step.holder });
    case 'delete':
      return isMemory ? null : gate.delete(step.key, step.token, meta);
    default:
      return gate.quarantine(step.key, step.floor);
  }
}

test('property 2: MemoryGate and Gate over each in-process store agree with the reference model at every step', async () => {
  await fc.assert(
    fc.asyncProperty(fc.boolean(), fc.array(stepArb, { minLength: 1, maxLength: 30 }), fc.array(fc.boolean(), { minLength: 1, maxLength: 5 }), async (strict, steps, losses) => {
      const options = { sameEpoch: strict ? 'strict' : 'allow' };
      const lossy = new LossyCasStore(losses.flatMap((l) => (l ? [true, false] : [false]))); // a lost commit is always followed by a won one
      const stores = [new MemoryHostStore(), new ObjectTxStore(), lossy];
      const gates = stores.map((s) => new Gate(s, { ...options, maxRetries: 8 }));
      const memory = new MemoryGate(options);
      const model = new Model(strict);
      const memoryModel = new Model(strict); // MemoryGate has no delete
      for (const step of steps) {
        if (step.kind === 'refused') {
          // Both gates decide the input the same: refused, with a code, nothing changed (checked below with the rest).
          const [what, call] = REFUSED[step.input];
          const refusedAlike = (e) => e?.name === 'FencegateError' && e.code === 'INVALID_ARGUMENT';
          assert.throws(() => call(memory, step.key, step.token), refusedAlike, `MemoryGate: ${what}`);
          for (const [i, gate] of gates.entries()) await assert.rejects(async () => call(gate, step.key, step.token), refusedAlike, `Gate ${i}: ${what}`);
        } else {
          model.current = step.key;
          const expected = step.kind === 'quarantine' ? model.quarantine(step.key, step.floor) : model.apply(step.kind, step.key, step.token, step.value, step.holder, step.opId);
          memoryModel.current = step.key;
          const expectedMemory = step.kind === 'delete' ? null : step.kind === 'quarantine' ? memoryModel.quarantine(step.key, step.floor) : memoryModel.apply(step.kind, step.key, step.token, step.value, step.holder, step.opId);
          if (expectedMemory !== null) {
            const got = await run(memory, step, true);
            if (got.claims === null) delete got.claims;
            assert.deepEqual(got, expectedMemory, `MemoryGate ${JSON.stringify(step, (k, v) => (typeof v === 'bigint' ? `${v}n` : v))}`);
          }
          for (const [i, gate] of gates.entries()) {
            const got = await run(gate, step, false);
            assert.deepEqual(got, expected, `Gate over store ${i}: ${JSON.stringify(step, (k, v) => (typeof v === 'bigint' ? `${v}n` : v))}`);
          }
        }
        // Marks, values and the persisted state of every key, after every step.
        for (const key of KEYS) {
          const r = model.rec(key);
          const m = memoryModel.rec(key);
          assert.deepEqual(memory.read(key), { mark: m.mark, value: m.value, hasValue: m.hasValue }, `MemoryGate read ${key}`);
          assert.deepEqual(persisted(memory.state(key)), modelPersisted(m), `MemoryGate state ${key}`);
          for (const [i, gate] of gates.entries()) {
            assert.deepEqual(await gate.read(key), { mark: r.mark, value: r.value, hasValue: r.hasValue }, `Gate ${i} read ${key}`);
            assert.deepEqual(persisted(stores[i].load(key)?.state), modelPersisted(r), `Gate ${i} state ${key}`);
            const seen = await gate.inspect(key);
            assert.deepEqual(seen, { key, exists: r.exists, mark: r.mark, holder: r.holder, quarantine: r.quarantine }, `Gate ${i} inspect ${key}`);
          }
        }
      }
    }),
    params(400),
  );
});
