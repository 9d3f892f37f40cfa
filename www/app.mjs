// The fencegate browser demo: the real Wasm package, a simulated clock, an
// IndexedDB host store, an issuer, three clients and two resources.
import * as fencegate from '../pkg/browser.mjs';
import { openDatabase, DemoStore, loadUi, saveUi, clearAll } from './idb-store.mjs';
import { makeIssuer, TTL_MS } from './leases.mjs';
import { renderTimeline } from './timeline.mjs';
import { SCENARIOS } from './scenarios.mjs';

const { init, Gate } = fencegate;
/** Signed tokens (DESIGN R9) when this build of the package has them. */
const SIGNED = typeof fencegate.mintToken === 'function';
const KID = 'demo-key-1';
const RESOURCES = ['orders/42', 'invoices/9'];
const CLIENTS = ['A', 'B', 'C'];
const ACTION_MS = 1_000; // every client action takes one simulated second

/** Forged or malformed tokens a client-less request can send: `(resource) → { token, long, short } | null`. */
const FORGED = {
  huge: () => ({ token: 0xffff_ffff_ffff_ffffn, long: '18446744073709551615 (2^64−1)', short: '2^64−1' }),
  missing: () => ({ token: undefined, long: 'no token', short: 'none' }),
  text: () => ({ token: '2', long: 'the text "2"', short: '"2"' }),
  bool: () => ({ token: true, long: 'the boolean true', short: 'true' }),
  zero: () => ({ token: 0, long: '0', short: '0' }),
  fraction: () => ({ token: 1.5, long: '1.5', short: '1.5' }),
  unsafe: () => ({ token: 2 ** 53, long: '2^53 (not a safe integer)', short: '2^53' }),
  // Signed-token forgeries (shown only when the package has mintToken).
  guessed: (resource) => ({
    token: fencegate.mintToken({ scope: resource, epoch: 2n ** 63n }, { kid: KID, hmac: new Uint8Array(32).fill(7) }),
    long: 'a token for epoch 2^63 signed with a guessed key',
    short: 'fg1 2^63',
  }),
  replay: (resource) => {
    // A genuine token some client holds for the other resource, replayed here.
    const other = RESOURCES.find((r) => r !== resource);
    for (const e of [...sim.events].reverse()) {
      const held = e.type === 'lease' ? sim.clients[e.client].held : null;
      if (held?.tokens?.[other]) {
        return { token: held.tokens[other], long: `${e.client}'s signed token for ${other} (epoch ${String(held.epoch)}), replayed`, short: `${held.epoch} replayed` };
      }
    }
    return null;
  },
};

const $ = (sel) => document.querySelector(sel);
const s = (ms) => `${ms / 1000} s`;

let db;
let store;
let gate;
let issuer;
let sim;
const shown = new Map(); // resource → { mark, value, hasValue }

function freshSim() {
  const clients = {};
  for (const c of CLIENTS) clients[c] = { paused: false, held: null };
  const secret = SIGNED ? Array.from(crypto.getRandomValues(new Uint8Array(32))) : null;
  return { now: 0, clients, events: [], log: [], scenario: null, nextId: 1, signed: false, secret };
}

// ───────────── log ─────────────

function log(kind, text, at = sim.now) {
  sim.log.push({ kind, text: `${s(at)} · ${text}` });
}

function verdictText(v) {
  const after = String(v.markAfter);
  if (v.outcome === 'advance') return `advance: mark ${String(v.markBefore)} → ${after}`;
  if (v.outcome === 'accept') return `accept: mark stays ${after}`;
  return `reject ${v.code}: mark stays ${after}, value unchanged`;
}

/** The token client `c` sends to `resource`: its signed token when resources require them, else its epoch. */
function clientToken(c, resource) {
  const held = sim.clients[c].held;
  if (!held) return { token: undefined, long: 'no token', short: 'none', epoch: undefined };
  if (sim.signed && held.tokens?.[resource]) {
    return { token: held.tokens[resource], long: `a signed token for epoch ${String(held.epoch)}`, short: `${String(held.epoch)} signed`, epoch: held.epoch };
  }
  return { token: held.epoch, long: `token ${String(held.epoch)}`, short: String(held.epoch), epoch: held.epoch };
}

/** The gate, rebuilt when the demo state or its signed-token setting changes. */
let gateOf = null;
let gateSigned = null;
function theGate() {
  if (gateOf !== sim || gateSigned !== sim.signed) {
    // With keys configured and requireSigned off, the gate takes plain numbers and signed tokens alike.
    const options = SIGNED && sim.secret ? { requireSigned: sim.signed, keys: { [KID]: Uint8Array.from(sim.secret) } } : undefined;
    gate = new Gate(store, options);
    gateOf = sim;
    gateSigned = sim.signed;
  }
  return gate;
}

// ───────────── the clock ─────────────

/** Moves the clock by `ms`, delivering writes in flight and noting lease expiries in time order. */
async function tick(ms) {
  const target = sim.now + ms;
  const due = [];
  for (const e of sim.events) {
    if (e.type === 'op' && e.outcome === null && e.arriveAt <= target) due.push({ at: e.arriveAt, op: e });
    if (e.type === 'lease' && e.to > sim.now && e.to <= target) due.push({ at: e.to, lease: e });
  }
  due.sort((a, b) => a.at - b.at || (a.lease ? -1 : 1));
  for (const d of due) {
    sim.now = d.at;
    if (d.lease) log('info', `${d.lease.client}'s lease (epoch ${d.lease.epoch}) runs out`);
    else await deliver(d.op);
  }
  sim.now = target;
}

// ───────────── fenced operations ─────────────

async function deliver(op) {
  const token = op.token;
  const gate = theGate();
  let v;
  try {
    v = op.kind === 'establish' ? await gate.establish(op.resource, token) : await gate.write(op.resource, token, op.value);
  } catch (e) {
    op.outcome = 'reject';
    op.code = e.code ?? 'ERROR';
    log('error', `${op.resource}: error ${op.code}: ${e.message}`);
    return;
  }
  op.outcome = v.outcome;
  op.code = v.code;
  const who = op.from === 'forged' ? 'a forged request' : op.from;
  const tokenText = `with ${op.tokenLong}`;
  const late = op.arriveAt > op.sentAt ? ` (sent at ${s(op.sentAt)}, delayed in flight)` : '';
  const est =
    op.epoch === undefined ? 'establishes with no token' : `establishes epoch ${String(op.epoch)}${typeof op.token === 'string' ? ' (signed)' : ''}`;
  const what = op.kind === 'establish' ? `${est} on ${op.resource}` : `writes "${op.value}" to ${op.resource} ${tokenText}`;
  log(v.ok ? 'ok' : 'reject', `${who} ${what}${late} → ${verdictText(v)}`);
  if (performance.getEntriesByName('fencegate:first-verdict').length === 0) performance.mark('fencegate:first-verdict');
}

/** `t`: `{ token, long, short, epoch? }`, the token sent and how the page names it. */
function send(from, kind, resource, value, t, delayMs) {
  const op = {
    type: 'op',
    id: sim.nextId++,
    from,
    kind,
    resource,
    value,
    token: t.token,
    epoch: t.epoch,
    tokenLong: t.long,
    tokenShort: t.short,
    sentAt: sim.now,
    arriveAt: sim.now + delayMs,
    outcome: null,
    code: null,
  };
  sim.events.push(op);
  return op;
}

// ───────────── actions (the controls and the scenarios call these) ─────────────

const demo = {
  async acquire(c) {
    const r = await issuer.acquire(c, sim.now);
    if (r.ok) {
      // The issuer signs one token per resource for this lease (used when resources require signed tokens).
      const tokens = SIGNED
        ? Object.fromEntries(
            RESOURCES.map((res) => [res, fencegate.mintToken({ scope: res, epoch: r.epoch, leaseId: r.leaseId, generation: 1 }, { kid: KID, hmac: Uint8Array.from(sim.secret) })]),
          )
        : null;
      sim.clients[c].held = { epoch: r.epoch, expiresAt: r.expiresAt, tokens };
      sim.events.push({ type: 'lease', client: c, epoch: String(r.epoch), from: sim.now, to: r.expiresAt });
      sim.events.push({ type: 'issuer', at: sim.now, label: `${String(r.epoch)}→${c}` });
      log('ok', `${c} acquires the lease: epoch ${String(r.epoch)}, until ${s(r.expiresAt)}`);
    } else if (r.code === 'LEASE_HELD') {
      log('reject', `${c} cannot acquire: LEASE_HELD by ${r.holder} (epoch ${String(r.epoch)}) until ${s(r.expiresAt)}`);
    } else {
      log('reject', `${c} cannot acquire: ${r.code}`);
    }
    await tick(ACTION_MS);
  },
  async write(c, resource, value, delayMs = 0) {
    const t = clientToken(c, resource);
    const op = send(c, 'write', resource, value, t, delayMs);
    if (delayMs > 0) log('info', `${c} sends "${value}" to ${resource} with ${t.long}; the network holds it until ${s(op.arriveAt)}`);
    else await deliver(op);
    await tick(ACTION_MS);
  },
  async establish(c, resource) {
    await deliver(send(c, 'establish', resource, undefined, clientToken(c, resource), 0));
    await tick(ACTION_MS);
  },
  async forge(kind, resource, value = 'must-not-land') {
    const t = FORGED[kind](resource);
    if (t === null) {
      log('info', `there is no signed token for another resource to replay yet: acquire a lease with resources requiring signed tokens first`);
      return;
    }
    await deliver(send('forged', 'write', resource, value, t, 0));
    await tick(ACTION_MS);
  },
  /** Resources require tokens signed with the issuer's key (requireSigned), or take plain numbers too. */
  async requireSigned(on) {
    sim.signed = on;
    log(
      'info',
      on
        ? 'resources now require tokens signed by the issuer (requireSigned): plain numbers are refused'
        : 'resources take plain numbers again (signed tokens still verify)',
    );
  },
  async pause(c) {
    const cl = sim.clients[c];
    if (cl.paused) return;
    cl.paused = true;
    sim.events.push({ type: 'pause', client: c, from: sim.now, to: null });
    log('info', `${c} pauses${cl.held ? ` (it keeps believing it holds epoch ${String(cl.held.epoch)})` : ''}`);
  },
  async resume(c) {
    const cl = sim.clients[c];
    if (!cl.paused) return;
    cl.paused = false;
    const p = sim.events.findLast((e) => e.type === 'pause' && e.client === c && e.to === null);
    if (p) p.to = sim.now;
    log('info', `${c} resumes${cl.held ? `; it still believes it holds epoch ${String(cl.held.epoch)}` : ''}`);
  },
  /** Recovery (R11): an operator's backup of the issuer's storage. */
  async backup() {
    const rec = issuer.recovery;
    const cur = await issuer.current();
    sim.backup = { at: sim.now, epoch: String(cur.epoch), record: await rec.backup() };
    sim.events.push({ type: 'issuer', at: sim.now, label: 'backup' });
    log('info', `the operator backs up the issuer: last epoch issued ${String(cur.epoch)}`);
    await tick(ACTION_MS);
  },
  /** Puts the old backup back, as a restore of the issuer's storage would. */
  async restore() {
    if (!sim.backup) return;
    await issuer.recovery.restore(sim.backup.record);
    sim.events.push({ type: 'issuer', at: sim.now, label: 'restore' });
    const highest = await highestMark();
    log(
      'reject',
      `the issuer is restored from the backup taken at ${s(sim.backup.at)}: last epoch issued ${sim.backup.epoch}, ` +
        `but ${highest.key} has accepted ${String(highest.mark)}`,
    );
    await tick(ACTION_MS);
  },
  /** Repair: raise the issuer to the highest mark any resource accepted. */
  async repair() {
    const highest = await highestMark();
    const r = await issuer.recovery.raise(highest.mark, sim.now);
    if (r.ok) {
      sim.events.push({ type: 'issuer', at: sim.now, label: `raised to ${String(r.epoch)}` });
      log('ok', `the issuer is raised to at least ${String(highest.mark)}, the highest mark its resources accepted: epoch ${String(r.epochBefore)} → ${String(r.epoch)}`);
    } else {
      log('reject', `the issuer cannot be raised: ${r.code} by ${r.holder} until ${s(r.expiresAt)}`);
    }
    await tick(ACTION_MS);
  },
  async pass(ms) {
    log('info', `time passes: ${s(ms)} (clock ${s(sim.now)} → ${s(sim.now + ms)})`);
    await tick(ms);
  },
};

// ───────────── rendering ─────────────

/** The resource with the highest mark (the first on a tie), marks compared exactly. */
async function highestMark() {
  let best = { key: RESOURCES[0], mark: 0 };
  for (const r of RESOURCES) {
    const mark = await theGate().mark(r);
    if (BigInt(mark) > BigInt(best.mark)) best = { key: r, mark };
  }
  return best;
}

async function refreshResources() {
  for (const r of RESOURCES) shown.set(r, await theGate().read(r));
}

function render() {
  $('#clock').textContent = s(sim.now);
  const rs = $('#require-signed');
  if (rs) rs.checked = Boolean(sim.signed);
  for (const r of RESOURCES) {
    const card = document.querySelector(`[data-resource="${r}"]`);
    const m = shown.get(r);
    card.querySelector('.mark').textContent = String(m.mark);
    card.querySelector('.value').textContent = m.hasValue ? JSON.stringify(m.value) : '(none)';
  }
  for (const c of CLIENTS) {
    const cl = sim.clients[c];
    const card = document.querySelector(`[data-client="${c}"]`);
    let text;
    if (!cl.held) text = 'holds no lease';
    else if (sim.now < cl.held.expiresAt) text = `holds epoch ${String(cl.held.epoch)} (lease until ${s(cl.held.expiresAt)})`;
    else text = `believes it holds epoch ${String(cl.held.epoch)} (its lease ran out at ${s(cl.held.expiresAt)})`;
    card.querySelector('.status').textContent = `${cl.paused ? 'paused' : 'running'} · ${text}`;
    card.classList.toggle('paused', cl.paused);
    for (const b of card.querySelectorAll('button[data-act]')) b.disabled = cl.paused && b.dataset.act !== 'pause';
    const pb = card.querySelector('button[data-act="pause"]');
    pb.textContent = cl.paused ? 'Resume' : 'Pause';
    pb.setAttribute('aria-label', `${cl.paused ? 'Resume' : 'Pause'} client ${c}`);
  }
  const ol = $('#log');
  ol.replaceChildren(
    ...sim.log.map((l) => {
      const li = document.createElement('li');
      li.className = l.kind;
      li.textContent = l.text;
      return li;
    }),
  );
  ol.scrollTop = ol.scrollHeight;
  renderTimeline($('#timeline'), sim, RESOURCES, new Map(RESOURCES.map((r) => [r, String(shown.get(r).mark)])));
  renderNarration();
}

function renderNarration() {
  const sc = sim.scenario;
  const next = $('#next');
  if (!sc) {
    $('#narration').textContent = 'Pick a scenario, or use the controls below.';
    next.hidden = true;
    return;
  }
  const def = SCENARIOS[sc.id];
  next.hidden = false;
  next.disabled = sc.step >= def.steps.length;
  next.textContent = sc.step >= def.steps.length ? 'Scenario finished' : `Next step (${sc.step + 1} of ${def.steps.length})`;
  $('#narration').textContent =
    sc.step === 0
      ? `${def.title}: ${def.steps.length} steps. Press “Next step” to play each one.`
      : `Step ${sc.step} of ${def.steps.length}: ${def.steps[sc.step - 1].say}`;
}

async function issuerLine() {
  const cur = await issuer.current();
  const lease = cur.lease;
  const live = lease && sim.now < lease.expiresAt;
  const highest = await highestMark();
  $('#issuer-state').textContent =
    `last epoch issued ${String(cur.epoch)}; ` +
    (lease ? `lease ${live ? 'held' : 'ran out'}: ${lease.holder}, until ${s(lease.expiresAt)}` : 'no lease') +
    (BigInt(cur.epoch) < BigInt(highest.mark)
      ? `. Behind: ${highest.key} has accepted ${String(highest.mark)}, more than this issuer has issued (restored from an older copy, or a forged token); repair it before the next acquisition.`
      : '');
  $('#issuer-state').classList.toggle('reject', BigInt(cur.epoch) < BigInt(highest.mark));
  const restore = $('#issuer-restore');
  if (restore) restore.disabled = !sim.backup;
}

// ───────────── action queue ─────────────

let queue = Promise.resolve();
let pending = 0;

/** Runs one user action after the previous one finished, then saves and redraws. */
function act(fn) {
  pending++;
  document.body.dataset.busy = 'true';
  queue = queue
    .then(fn)
    .catch((e) => log('error', `error ${e.code ?? e.name}: ${e.message}`))
    .then(async () => {
      await refreshResources();
      await issuerLine();
      await saveUi(db, 'sim', sim);
      render();
    })
    .catch((e) => showFatal(e))
    .finally(() => {
      if (--pending === 0) delete document.body.dataset.busy;
    });
  return queue;
}

function showFatal(e) {
  const p = $('#fatal');
  p.hidden = false;
  p.textContent = `The demo stopped: ${e.code ?? e.name}: ${e.message}`;
}

// ───────────── wiring ─────────────

function clientCards() {
  const tpl = $('#client-template');
  const box = $('#clients');
  for (const c of CLIENTS) {
    const card = tpl.content.firstElementChild.cloneNode(true);
    card.dataset.client = c;
    card.querySelector('h3').textContent = `Client ${c}`;
    for (const b of card.querySelectorAll('button[data-act]')) {
      const verb = b.textContent;
      b.setAttribute('aria-label', `${verb} client ${c}`);
    }
    card.addEventListener('click', (ev) => {
      const b = ev.target.closest('button[data-act]');
      if (!b) return;
      performance.mark('fencegate:click');
      const resource = $('#op-resource').value;
      if (b.dataset.act === 'acquire') act(() => demo.acquire(c));
      if (b.dataset.act === 'write') act(() => demo.write(c, resource, $('#op-value').value, Number($('#op-delay').value)));
      if (b.dataset.act === 'establish') act(() => demo.establish(c, resource));
      if (b.dataset.act === 'pause') act(() => (sim.clients[c].paused ? demo.resume(c) : demo.pause(c)));
    });
    box.append(card);
  }
}

function wire() {
  for (const b of document.querySelectorAll('button[data-pass]')) {
    b.addEventListener('click', () => act(() => demo.pass(Number(b.dataset.pass))));
  }
  $('#require-signed')?.addEventListener('change', (ev) => act(() => demo.requireSigned(ev.target.checked)));
  $('#issuer-backup').addEventListener('click', () => act(() => demo.backup()));
  $('#issuer-restore').addEventListener('click', () => act(() => demo.restore()));
  $('#issuer-repair').addEventListener('click', () => act(() => demo.repair()));
  $('#forge').addEventListener('click', () => act(() => demo.forge($('#forge-kind').value, $('#op-resource').value, $('#op-value').value)));
  $('#reset').addEventListener('click', () =>
    act(async () => {
      await clearAll(db);
      sim = freshSim();
    }),
  );
  for (const b of document.querySelectorAll('button[data-scenario]')) {
    b.addEventListener('click', () =>
      act(async () => {
        await clearAll(db);
        sim = freshSim();
        sim.scenario = { id: b.dataset.scenario, step: 0 };
      }).then(() => $('#next').focus()),
    );
  }
  $('#next').addEventListener('click', () =>
    act(async () => {
      const sc = sim.scenario;
      const def = sc && SCENARIOS[sc.id];
      if (!def || sc.step >= def.steps.length) return;
      const step = def.steps[sc.step];
      sc.step++;
      await step.run(demo);
    }),
  );
}

async function main() {
  await init();
  db = await openDatabase('fencegate-www');
  store = new DemoStore(db);
  issuer = makeIssuer(fencegate, store);
  $('#issuer-kind').textContent = issuer.label;
  // Controls for features this build does not have stay hidden.
  for (const el of document.querySelectorAll('[data-needs="recovery"]')) el.hidden = issuer.recovery === null;
  for (const el of document.querySelectorAll('[data-needs="signed"]')) el.hidden = false;
  $('#ttl').textContent = s(TTL_MS);
  $('#signed-note').textContent = SIGNED
    ? 'Turn on “Resources require signed tokens” below and the same forgery is refused (UNSIGNED_TOKEN).'
    : 'This build of fencegate has no signed tokens, so nothing stops a forged plain number.';
  for (const el of document.querySelectorAll('[data-needs="signed"]')) {
    if (!SIGNED) el.remove(); // not built: not shown (options inside a select cannot just be hidden)
  }
  sim = (await loadUi(db, 'sim')) ?? freshSim();
  clientCards();
  wire();
  await refreshResources();
  await issuerLine();
  for (const el of document.querySelectorAll('[data-needs-wasm]')) el.disabled = false;
  render();
  $('#status').textContent = 'fencegate loaded (WebAssembly)';
  performance.mark('fencegate:ready');
  document.body.dataset.ready = 'true';
}

main().catch(showFatal);
