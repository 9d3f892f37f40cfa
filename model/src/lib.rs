//! A model check of fencegate's protocol: an issuer and its store, one or two
//! resources and their stores, two or three clients, a network that loses,
//! delays, reorders and duplicates messages, a clock, store restores and
//! `reconcile`. Every store transition is the real core function
//! ([`core`]); the model only decides *which* transition happens next.
//!
//! What is modelled, exactly (also in `docs/guarantees.md`):
//!
//! * **Issuer**: stateless between requests, as `Issuer` in `pkg/lib/issuer.mjs`:
//!   each request loads the record, runs the core transition and commits the
//!   next record *before* the reply leaves (variant
//!   [`IssuerVariant::RepliesBeforePersist`] breaks that on purpose).
//! * **Resources**: each delivered operation loads the record, runs
//!   `decide_state` and commits the next record atomically with the data
//!   change (DESIGN R1); nothing is written when it does not apply.
//! * **Clients**: acquire with a request id, then for each resource
//!   establish, then `writes` writes with fresh operation ids, each with
//!   `holder` = the lease's holder; then release. A client never looks at the
//!   clock: any send may arrive arbitrarily late (a pause past its lease).
//!   A client may crash at any point (it forgets its lease; its messages stay
//!   in flight) and acquires again with a new holder id (a new incarnation).
//! * **Network**: every message sent stays in flight: it may be delivered any
//!   number of times (a duplicate, or a client's retry with the same operation
//!   id / request id: identical bytes), in any order, after any delay, or
//!   never (lost). A reply never delivered is "crashed between commit and
//!   reply"; the retry after it is the request delivered again.
//! * **Time**: `now` (ms) is a model variable; `Tick` advances it by 1 up to a
//!   bound. Leases last `ttl` ms.
//! * **Restores**: a snapshot of the issuer's or a resource's store can be
//!   taken at any point (the initial empty store is the first snapshot) and
//!   later restored.
//! * **Own data** (`own_data` bound): the writes are `gate.transaction(key,
//!   epoch, body, { opId, holder })` instead: the store's transaction takes
//!   the key's row lock, decides on the locked fence record and, when the
//!   verdict applies, writes the next record and runs the caller's
//!   statements (an effect on the caller's own table, separate from the
//!   fence record) in the same transaction; a later step commits both at
//!   once, or rolls both back (the statements threw, the connection died
//!   before COMMIT). A refusal or a duplicate rolls back at once: the
//!   statements never run. A restore of the resource's store restores the
//!   caller's table with it (one database). Variants ([`TxnVariant`]) break
//!   this on purpose.
//! * **Reconcile**: the plan is the real planner's (`fencegate::reconcile::plan`,
//!   which `pkg/lib/reconcile.mjs` carries out), run step by step with the
//!   Rust primitives the JS calls: read every record, then `raise_revoking` on
//!   the issuer, then (planned again from the raise's result) per key
//!   `establish` for a live lease's holder or `quarantine_at`. Other actions
//!   interleave between the steps, as they do in production.

pub mod core;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use fencegate::issuer::{IssuerRecord, LeaseRecord};
use fencegate::reconcile::{plan, FenceRecord, Raised as PlanRaised, ScopeInput};
use stateright::{Model, Property};

use crate::core::{
    gate_op, issuer_acquire, issuer_raise_revoking, issuer_release, issuer_view, quarantine,
    resource_view, Acquired, Answer, GateAnswer, GateVariant, Raised,
};

/// The bounds of one exhaustive run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bounds {
    /// Number of clients (2 or 3).
    pub clients: u8,
    /// Number of resource keys (1 or 2).
    pub resources: u8,
    /// Acquisitions each client may start.
    pub acquisitions: u8,
    /// Writes per resource per lease (each with a fresh operation id).
    pub writes: u8,
    /// The clock runs from 0 to this many ms.
    pub max_time: u64,
    /// Lease length (ms).
    pub ttl: u64,
    /// Operation-id window of the gate (1 pushes ids into the Bloom filter).
    pub window: usize,
    /// Snapshots that may be taken (beyond the initial empty stores).
    pub snapshots: u8,
    /// Restores (issuer or resource), in total.
    pub restores: u8,
    /// Reconcile runs.
    pub reconciles: u8,
    /// Client crashes, in total.
    pub crashes: u8,
    /// Whether clients release their lease after their last write.
    pub release: bool,
    /// Writes are `gate.transaction` over the caller's own data (one effect per op id).
    pub own_data: bool,
    /// Own-data transactions that may roll back after their fence step, in total.
    pub aborts: u8,
}

impl Bounds {
    /// The CI bounds (`scripts/model-check.sh`, run by `scripts/test.sh`): two
    /// exhaustive runs. The first has every environment fault (late
    /// deliveries, duplicates, losses, a paused client, a restore of either
    /// store, a reconcile interleaved with everything); the second has two
    /// writes per lease with a window of one id, so ids are pushed into the
    /// Bloom filter (`OP_ID_EXPIRED`), without restores.
    pub fn ci() -> Vec<(&'static str, Bounds)> {
        let faults = Bounds {
            clients: 2,
            resources: 1,
            acquisitions: 1,
            writes: 1,
            max_time: 1,
            ttl: 1,
            window: 1,
            snapshots: 0,
            restores: 1,
            reconciles: 1,
            crashes: 0,
            release: false,
            own_data: false,
            aborts: 0,
        };
        let ops = Bounds {
            writes: 2,
            restores: 0,
            reconciles: 0,
            ..faults.clone()
        };
        let own = Bounds {
            own_data: true,
            aborts: 1,
            reconciles: 0,
            ..faults.clone()
        };
        vec![
            ("ci: faults", faults),
            ("ci: op ids", ops),
            ("ci: own data", own),
        ]
    }

    /// The larger bound (`scripts/model-check.sh --large`): both CI runs in
    /// one (two writes per lease and every fault).
    pub fn large() -> Vec<(&'static str, Bounds)> {
        vec![(
            "large",
            Bounds {
                writes: 2,
                ..Bounds::ci()[0].1.clone()
            },
        )]
    }

    /// Sets one bound by name (`clients=3`), for exploring other bounds from the command line.
    pub fn set(&mut self, kv: &str) -> Result<(), String> {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| format!("{kv}: expected field=value"))?;
        let n: u64 = v.parse().map_err(|_| format!("{kv}: not a number"))?;
        let small = || u8::try_from(n).map_err(|_| format!("{kv}: too large"));
        match k {
            "clients" => self.clients = small()?,
            "resources" => self.resources = small()?,
            "acquisitions" => self.acquisitions = small()?,
            "writes" => self.writes = small()?,
            "max_time" => self.max_time = n,
            "ttl" => self.ttl = n,
            "window" => self.window = n as usize,
            "snapshots" => self.snapshots = small()?,
            "restores" => self.restores = small()?,
            "reconciles" => self.reconciles = small()?,
            "crashes" => self.crashes = small()?,
            "release" => self.release = n != 0,
            "own_data" => self.own_data = n != 0,
            "aborts" => self.aborts = small()?,
            _ => return Err(format!("{kv}: unknown bound")),
        }
        Ok(())
    }

    fn steps_per_lease(&self) -> u8 {
        self.resources * (1 + self.writes)
    }
}

/// Whether the issuer persists before it answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IssuerVariant {
    /// The shipped protocol: commit the next record, then answer.
    PersistsFirst,
    /// Broken on purpose: answer first; the write happens in a later step and
    /// is lost when the issuer process crashes before it.
    RepliesBeforePersist,
}

/// How an own-data transaction (`gate.transaction`) runs at the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TxnVariant {
    /// The shipped protocol (the `fencedTransaction` store verb): one
    /// transaction holds the key's row lock from the fence read to COMMIT;
    /// the decision is made on the locked record; only when it applies are
    /// the next record written and the caller's statements run, and both
    /// commit together or roll back together.
    InOneTransaction,
    /// Broken on purpose: the check outside the transaction. The fence record
    /// is read and decided without a lock; the transaction later writes the
    /// decided record and the caller's statements without looking again.
    CheckOutside,
    /// Broken on purpose: the caller's statements run before the decision
    /// and outside its transaction (autocommit): they land whatever the
    /// verdict; the fence step then commits on its own.
    BodyBeforeDecision,
    /// Broken on purpose: the fence record commits on its own as soon as the
    /// decision applies; the caller's statements commit in a transaction of
    /// their own, which may roll back.
    FenceCommitsApart,
}

/// The model: bounds and the variants.
#[derive(Clone, Debug)]
pub struct FenceModel {
    /// The bounds.
    pub bounds: Bounds,
    /// Which gate decision runs.
    pub gate: GateVariant,
    /// Which issuer protocol runs.
    pub issuer: IssuerVariant,
    /// How own-data transactions run (with the `own_data` bound).
    pub txn: TxnVariant,
}

impl FenceModel {
    /// The shipped protocol within `bounds`.
    pub fn new(bounds: Bounds) -> FenceModel {
        FenceModel {
            bounds,
            gate: GateVariant::Real,
            issuer: IssuerVariant::PersistsFirst,
            txn: TxnVariant::InOneTransaction,
        }
    }
}

/// A client's lease incarnation: (client, acquisition number). Its holder id is
/// `c<client>.<acquisition>`; operation ids are `c<client>.<acquisition>.r<key>.w<n>`.
pub type Incarnation = (u8, u8);

fn holder_id((c, a): Incarnation) -> String {
    format!("c{c}.{a}")
}

/// What a fenced operation does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OpKind {
    /// `gate.establish(key, epoch, { holder })`.
    Establish,
    /// `gate.write(key, epoch, value, { holder, opId })`, the n-th write on this key.
    Write(u8),
    /// `gate.transaction(key, epoch, body, { holder, opId })`, the n-th on this
    /// key: `body` makes one effect on the caller's own table.
    Txn(u8),
}

/// The effect of one own-data transaction in the caller's table: (epoch, who, n),
/// i.e. the operation id `<holder>.r<key>.w<n>` with its token.
pub type Effect = (u64, Incarnation, u8);

/// An own-data transaction open at a resource's store: its fence step is
/// done, its commit (or rollback) is a later step.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OpenTx {
    /// The resource key (its row lock is held, in [`TxnVariant::InOneTransaction`]).
    pub key: u8,
    /// The effect the caller's statements make.
    pub effect: Effect,
    /// The lease's expiry (ghost).
    pub expires: u64,
    /// The fence record the commit writes (`None`: it was committed already, or is not part of this transaction).
    pub fence: Option<String>,
    /// Whether the caller's statements are part of this transaction.
    pub runs_body: bool,
}

/// A message in flight.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Msg {
    /// Client → issuer: acquire, request id = holder id.
    Acquire(Incarnation),
    /// Issuer → client: the answer to an acquire.
    Reply(Incarnation, Acquired),
    /// Client → issuer: release the lease of this epoch.
    Release(Incarnation, u64),
    /// Client → resource: a fenced operation.
    Op {
        /// Who sends it.
        who: Incarnation,
        /// The resource key.
        key: u8,
        /// The token.
        epoch: u64,
        /// The lease's expiry (ghost: to tell a late write).
        expires: u64,
        /// Establish or write.
        kind: OpKind,
    },
}

/// Where a client is in its script.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// No lease.
    Idle,
    /// Waiting for the issuer's answer.
    Acquiring,
    /// Holding a lease: `step` operations sent so far.
    Holding {
        /// The epoch.
        epoch: u64,
        /// The lease's expiry (ms).
        expires: u64,
        /// Operations sent.
        step: u8,
    },
}

/// One client.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Client {
    /// Its phase.
    pub phase: Phase,
    /// Acquisitions started (the current incarnation's number).
    pub acq: u8,
}

/// A store that can be snapshotted and restored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    /// The issuer's store.
    Issuer,
    /// A resource's store.
    Resource(u8),
}

/// A reconcile run in progress: the plan of the real planner
/// (`fencegate::reconcile::plan`, what `pkg/lib/reconcile.mjs` carries out).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Recon {
    /// `now` as passed to reconcile.
    pub now: u64,
    /// What reconcile read (and, after step 0, the raise's result).
    pub input: ScopeInput,
    /// 0: the issuer step is next; k: key k−1 is next.
    pub step: u8,
    /// Per key, after step 0: the epoch to raise it to and the holder to
    /// establish for (`None`: quarantine), or nothing to do.
    pub steps: Vec<Option<(u64, Option<String>)>>,
    /// Some epoch was issued that no record read shows (the procedure's
    /// step 3: reconcile cannot see it), or the issuer was restored during
    /// the run: this run does not count for property (d).
    pub blind: bool,
    /// Another action ran between the steps of this run.
    pub interleaved: bool,
    /// Whether the run wrote anything.
    pub changed: bool,
}

/// Violation flags (sticky): an `always` property fails when its flag is set.
pub mod flag {
    /// (a) a mark went down without a restore of its own store.
    pub const MARK_LOWERED: u16 = 1;
    /// (b) a write below an epoch established at that resource landed.
    pub const WRITE_BELOW_ESTABLISHED: u16 = 2;
    /// (c) two holders had writes accepted at one epoch at one resource.
    pub const TWO_HOLDERS_AT_KEY: u16 = 4;
    /// (c) two holders had writes accepted at one epoch (any resources).
    pub const TWO_HOLDERS: u16 = 8;
    /// (d) the issuer granted one epoch twice.
    pub const EPOCH_TWICE: u16 = 16;
    /// (d) after reconcile the issuer granted an epoch ≤ some mark.
    pub const GRANT_AT_OR_BELOW_MARK: u16 = 32;
    /// (e) an operation id applied twice in one epoch.
    pub const OP_TWICE: u16 = 64;
    /// A refused operation returned a next record.
    pub const REFUSAL_WROTE: u16 = 128;
    /// A second reconcile right after the first one changed something.
    pub const RECONCILE_NOT_IDEMPOTENT: u16 = 256;
    /// (g) an effect reached the caller's data in a step after which the
    /// fence record does not hold its operation as applied.
    pub const EFFECT_WITHOUT_APPLY: u16 = 512;
    /// (i) an effect below an epoch established at that resource landed.
    pub const EFFECT_BELOW_ESTABLISHED: u16 = 1024;
    /// (j) a transaction answered applied or duplicate without its effect in the caller's data.
    pub const ACKED_EFFECT_MISSING: u16 = 2048;
}

/// Events for `sometimes` properties (sticky).
pub mod seen {
    /// (f) a write sent under a lease that had expired was refused.
    pub const LATE_WRITE_REFUSED: u16 = 1;
    /// A retried operation id answered `duplicate`.
    pub const DUPLICATE: u16 = 2;
    /// An establish or write answered `EPOCH_CONFLICT`.
    pub const EPOCH_CONFLICT: u16 = 4;
    /// An operation answered `QUARANTINED`.
    pub const QUARANTINED: u16 = 8;
    /// Reconcile wrote a repair after a restore.
    pub const RECONCILE_REPAIRED: u16 = 16;
    /// A write answered `OP_ID_EXPIRED` (the id was pushed out of the window).
    pub const OP_ID_EXPIRED: u16 = 32;
    /// A transaction sent under a lease that had expired was refused (its statements never ran).
    pub const LATE_TXN_REFUSED: u16 = 64;
    /// A retried transaction answered `duplicate` (its statements did not run again).
    pub const TXN_DUPLICATE: u16 = 128;
    /// A transaction rolled back after its fence step, and its retry committed.
    pub const TXN_ROLLED_BACK_RETRIED: u16 = 256;
}

/// Ghost variables: history the properties need, never read by the protocol.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Ghost {
    /// Violation flags ([`flag`]).
    pub violated: u16,
    /// Events ([`seen`]).
    pub seen: u16,
    /// Per key: the largest epoch established there since its last restore.
    pub established: Vec<u64>,
    /// Per key: epoch → holder of the writes accepted there since its last restore.
    pub writers_at: Vec<BTreeMap<u64, Incarnation>>,
    /// Epoch → holder of writes accepted anywhere (not checked once the issuer was restored).
    pub writers: BTreeMap<u64, Incarnation>,
    /// The issuer's store has been restored.
    pub issuer_restored: bool,
    /// Epochs granted (not replays) since the issuer's last restore.
    pub issued: BTreeSet<u64>,
    /// The largest epoch ever granted (restores do not forget it).
    pub max_granted: u64,
    /// Per key: (epoch, operation) applied since its last restore.
    pub applied: Vec<BTreeSet<(u64, Incarnation, u8)>>,
    /// A reconcile that saw every issued epoch finished after the issuer's last restore.
    pub reconciled: bool,
    /// A store has been restored.
    pub restored: bool,
    /// Own-data transactions rolled back after their fence step.
    pub rolled_back: BTreeSet<Effect>,
}

/// Budgets left.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Budget {
    /// Snapshots.
    pub snapshots: u8,
    /// Restores.
    pub restores: u8,
    /// Reconcile runs.
    pub reconciles: u8,
    /// Client crashes.
    pub crashes: u8,
    /// Own-data rollbacks after the fence step.
    pub aborts: u8,
}

/// The whole system.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct State {
    /// The clock (ms).
    pub now: u64,
    /// The issuer's store: its record of the scope (JSON text), `None` = no record.
    pub issuer: Option<String>,
    /// The issuer store's snapshot.
    pub issuer_backup: Option<String>,
    /// Broken issuer only: the record answered but not yet written.
    pub issuer_pending: Option<String>,
    /// Each resource key's fence record (JSON text), `None` = no record.
    pub keys: Vec<Option<String>>,
    /// Each key's snapshot.
    pub key_backups: Vec<Option<String>>,
    /// Each resource's caller table (own data, beside the fence table in the
    /// same database): effect → how many times it is there.
    pub data: Vec<BTreeMap<Effect, u8>>,
    /// Each caller table's snapshot (taken and restored with its key's).
    pub data_backups: Vec<BTreeMap<Effect, u8>>,
    /// Own-data transactions open at the stores.
    pub txs: BTreeSet<OpenTx>,
    /// The clients.
    pub clients: Vec<Client>,
    /// Messages in flight.
    pub net: BTreeSet<Msg>,
    /// A reconcile run in progress.
    pub recon: Option<Recon>,
    /// Budgets left.
    pub budget: Budget,
    /// Ghost history.
    pub ghost: Ghost,
}

/// One step of the system or its environment.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// The clock advances 1 ms.
    Tick,
    /// A client starts an acquisition.
    Acquire(u8),
    /// A holding client sends its next operation.
    Send(u8),
    /// A client that sent everything releases its lease.
    Release(u8),
    /// A client crashes (forgets its lease).
    Crash(u8),
    /// A message in flight is delivered; it stays in flight (it may be
    /// delivered again: a duplicate, or a retry with the same id).
    Deliver(Msg),
    /// Broken issuer: the pending write reaches the store.
    IssuerPersist,
    /// Broken issuer: the issuer process crashes; the pending write is lost.
    IssuerCrash,
    /// Snapshot a store.
    Snapshot(Target),
    /// Restore a store from its snapshot.
    Restore(Target),
    /// Reconcile reads every record.
    ReconcileRead,
    /// Reconcile performs its next write.
    ReconcileStep,
    /// An open own-data transaction commits (its reply may still be lost).
    Commit(OpenTx),
    /// An open own-data transaction rolls back (the statements threw, a
    /// serialization failure, the connection lost before COMMIT).
    Abort(OpenTx),
}

fn mark_of(text: &Option<String>) -> u64 {
    resource_view(text.as_deref()).mark
}

/// Ghost bookkeeping of a write (or transaction) whose fence record lands at key `k`: (b), (c), (e).
fn fence_applied(g: &mut Ghost, k: usize, epoch: u64, who: Incarnation, n: u8) {
    if epoch < g.established[k] {
        g.violated |= flag::WRITE_BELOW_ESTABLISHED;
    }
    if *g.writers_at[k].entry(epoch).or_insert(who) != who {
        g.violated |= flag::TWO_HOLDERS_AT_KEY;
    }
    if *g.writers.entry(epoch).or_insert(who) != who && !g.issuer_restored {
        g.violated |= flag::TWO_HOLDERS;
    }
    if !g.applied[k].insert((epoch, who, n)) {
        g.violated |= flag::OP_TWICE;
    }
}

/// The operation id of an effect at key `key`.
fn op_id_of(key: u8, (_, who, n): Effect) -> String {
    format!("{}.r{key}.w{n}", holder_id(who))
}

impl FenceModel {
    fn lease_steps(&self) -> u8 {
        self.bounds.steps_per_lease()
    }

    fn op_of(&self, step: u8) -> (u8, OpKind) {
        let per = 1 + self.bounds.writes;
        let key = step / per;
        let k = step % per;
        (
            key,
            if k == 0 {
                OpKind::Establish
            } else if self.bounds.own_data {
                OpKind::Txn(k - 1)
            } else {
                OpKind::Write(k - 1)
            },
        )
    }

    /// Whether an open transaction holds `key`'s row lock (nothing else on
    /// that key runs until it commits or rolls back).
    fn locked(&self, s: &State, key: u8) -> bool {
        self.txn == TxnVariant::InOneTransaction && s.txs.iter().any(|t| t.key == key)
    }

    fn deliver(&self, s: &mut State, m: &Msg) {
        match m {
            Msg::Acquire(who) => {
                let id = holder_id(*who);
                let (answer, next) =
                    issuer_acquire(s.issuer.as_deref(), &id, self.bounds.ttl, s.now, &id);
                match self.issuer {
                    IssuerVariant::PersistsFirst => {
                        if let Some(n) = next {
                            s.issuer = Some(n);
                        }
                    }
                    IssuerVariant::RepliesBeforePersist => {
                        if next.is_some() {
                            s.issuer_pending = next;
                        }
                    }
                }
                if let Acquired::Granted {
                    epoch,
                    replayed: false,
                    ..
                } = answer
                {
                    let g = &mut s.ghost;
                    if !g.issued.insert(epoch) {
                        g.violated |= flag::EPOCH_TWICE;
                    }
                    g.max_granted = g.max_granted.max(epoch);
                    let max_mark = s.keys.iter().map(mark_of).max().unwrap_or(0);
                    if g.reconciled && epoch <= max_mark {
                        g.violated |= flag::GRANT_AT_OR_BELOW_MARK;
                    }
                }
                // The client reads the epoch and expiry, not whether it was a replay.
                let answer = match answer {
                    Acquired::Granted { epoch, expires, .. } => Acquired::Granted {
                        epoch,
                        expires,
                        replayed: false,
                    },
                    refused => refused,
                };
                s.net.insert(Msg::Reply(*who, answer));
            }
            Msg::Reply(who, answer) => {
                let c = &mut s.clients[usize::from(who.0)];
                if c.phase == Phase::Acquiring && c.acq == who.1 {
                    c.phase = match *answer {
                        Acquired::Granted { epoch, expires, .. } => Phase::Holding {
                            epoch,
                            expires,
                            step: 0,
                        },
                        Acquired::Refused(_) => Phase::Idle,
                    };
                }
            }
            Msg::Release(who, epoch) => {
                if let Some(n) = issuer_release(s.issuer.as_deref(), *epoch, &holder_id(*who)) {
                    s.issuer = Some(n);
                }
            }
            Msg::Op {
                who,
                key,
                epoch,
                expires,
                kind,
            } => {
                let k = usize::from(*key);
                let holder = holder_id(*who);
                let op_id = match kind {
                    OpKind::Establish => None,
                    OpKind::Write(n) | OpKind::Txn(n) => Some(format!("{holder}.r{key}.w{n}")),
                };
                let d = gate_op(
                    s.keys[k].as_deref(),
                    *epoch,
                    *kind == OpKind::Establish,
                    op_id.as_deref(),
                    Some(&holder),
                    self.bounds.window,
                    self.gate,
                );
                let g = &mut s.ghost;
                if !d.answer.applies() && d.next.is_some() {
                    g.violated |= flag::REFUSAL_WROTE;
                }
                match d.answer {
                    Answer::Duplicate => g.seen |= seen::DUPLICATE,
                    Answer::Refused("EPOCH_CONFLICT") => g.seen |= seen::EPOCH_CONFLICT,
                    Answer::Refused("QUARANTINED") => g.seen |= seen::QUARANTINED,
                    Answer::Refused("OP_ID_EXPIRED") => g.seen |= seen::OP_ID_EXPIRED,
                    _ => {}
                }
                if let (OpKind::Write(_), Answer::Refused(_)) = (kind, d.answer) {
                    if s.now >= *expires {
                        g.seen |= seen::LATE_WRITE_REFUSED;
                    }
                }
                match kind {
                    OpKind::Establish => {
                        if d.answer.applies() {
                            g.established[k] = g.established[k].max(*epoch);
                            s.keys[k] = d.next;
                        }
                    }
                    OpKind::Write(n) => {
                        if d.answer.applies() {
                            fence_applied(g, k, *epoch, *who, *n);
                            s.keys[k] = d.next;
                        }
                    }
                    OpKind::Txn(n) => {
                        let effect = (*epoch, *who, *n);
                        self.begin_txn(s, k, effect, *expires, d);
                    }
                }
            }
        }
    }

    /// The fence step of an own-data transaction delivered to key `k`: what
    /// [`TxnVariant`] runs with the decision `d`.
    fn begin_txn(&self, s: &mut State, k: usize, effect: Effect, expires: u64, d: GateAnswer) {
        let g = &mut s.ghost;
        match d.answer {
            Answer::Duplicate => {
                g.seen |= seen::TXN_DUPLICATE;
                // (j): a duplicate acknowledges the op id as applied: its effect must be there.
                if !s.data[k].contains_key(&effect) {
                    g.violated |= flag::ACKED_EFFECT_MISSING;
                }
            }
            Answer::Refused(_) if s.now >= expires => g.seen |= seen::LATE_TXN_REFUSED,
            _ => {}
        }
        let key = k as u8;
        match self.txn {
            TxnVariant::InOneTransaction | TxnVariant::CheckOutside => {
                // Refused or duplicate: rolled back at once, the statements never run.
                if d.answer.applies() {
                    s.txs.insert(OpenTx {
                        key,
                        effect,
                        expires,
                        fence: d.next,
                        runs_body: true,
                    });
                }
            }
            TxnVariant::BodyBeforeDecision => {
                *s.data[k].entry(effect).or_insert(0) += 1;
                if d.answer.applies() {
                    s.txs.insert(OpenTx {
                        key,
                        effect,
                        expires,
                        fence: d.next,
                        runs_body: false,
                    });
                }
            }
            TxnVariant::FenceCommitsApart => {
                if d.answer.applies() {
                    let (epoch, who, n) = effect;
                    fence_applied(g, k, epoch, who, n);
                    s.keys[k] = d.next;
                    s.txs.insert(OpenTx {
                        key,
                        effect,
                        expires,
                        fence: None,
                        runs_body: true,
                    });
                }
            }
        }
    }

    /// COMMIT of an open own-data transaction: its fence record and its effect become visible together.
    fn commit_txn(&self, s: &mut State, tx: &OpenTx) {
        let k = usize::from(tx.key);
        let (epoch, who, n) = tx.effect;
        let g = &mut s.ghost;
        if let Some(next) = &tx.fence {
            fence_applied(g, k, epoch, who, n);
            s.keys[k] = Some(next.clone());
        }
        if tx.runs_body {
            if epoch < g.established[k] {
                g.violated |= flag::EFFECT_BELOW_ESTABLISHED;
            }
            if g.rolled_back.contains(&tx.effect) {
                g.seen |= seen::TXN_ROLLED_BACK_RETRIED;
            }
            *s.data[k].entry(tx.effect).or_insert(0) += 1;
        }
    }

    /// Reconcile step 0 (read): `issuer.current`, `gate.inspect` of every key.
    fn recon_read(&self, s: &State) -> Recon {
        let cur = issuer_view(s.issuer.as_deref());
        let views: Vec<_> = s.keys.iter().map(|t| resource_view(t.as_deref())).collect();
        let max_mark = views.iter().map(|v| v.mark).max().unwrap_or(0);
        let input = ScopeInput {
            issuer: IssuerRecord {
                scope: String::new(),
                epoch: cur.epoch,
                lease: cur.lease.map(|(holder, expires_at)| LeaseRecord {
                    lease_id: String::new(),
                    holder,
                    expires_at,
                    request_id: None,
                }),
            },
            keys: views
                .into_iter()
                .enumerate()
                .map(|(k, v)| FenceRecord {
                    key: k.to_string(),
                    exists: true,
                    mark: v.mark,
                    holder: v.holder,
                    quarantine: v.quarantine,
                })
                .collect(),
            now: s.now,
            bigint: false,
            raised: None,
        };
        Recon {
            now: s.now,
            step: 0,
            steps: Vec::new(),
            blind: s.ghost.max_granted > max_mark.max(input.issuer.epoch),
            input,
            interleaved: false,
            changed: false,
        }
    }

    /// One write of the reconcile plan. Returns false when reconcile stops
    /// (an issuer raise refused: the JS throws).
    fn recon_step(&self, s: &mut State, r: &mut Recon) -> bool {
        if r.step == 0 {
            // The issuer step of the plan, then the resource steps planned
            // from the raise's actual result (as reconcile.mjs does).
            if let Some(raise) = plan(&r.input).raise {
                let (answer, next) =
                    issuer_raise_revoking(s.issuer.as_deref(), raise.at_least, r.now);
                match answer {
                    Raised::Held => return false,
                    Raised::Raised {
                        before,
                        epoch,
                        revoked,
                    } => {
                        if next.is_some() {
                            r.changed = true;
                            s.issuer = next;
                        }
                        r.input.raised = Some(PlanRaised {
                            epoch_before: before,
                            epoch,
                            revoked,
                        });
                    }
                }
            }
            r.steps = vec![None; r.input.keys.len()];
            for step in plan(&r.input).resources {
                let k: usize = step.key.parse().expect("keys are named by their index");
                r.steps[k] = Some((step.mark_after, step.holder));
            }
        } else {
            let k = usize::from(r.step - 1);
            match r.steps[k].clone() {
                None => {}
                Some((epoch, Some(holder))) => {
                    let d = gate_op(
                        s.keys[k].as_deref(),
                        epoch,
                        true,
                        None,
                        Some(&holder),
                        self.bounds.window,
                        self.gate,
                    );
                    if d.answer.applies() {
                        s.ghost.established[k] = s.ghost.established[k].max(epoch);
                        r.changed = true;
                        s.keys[k] = d.next;
                    }
                }
                Some((epoch, None)) => {
                    if let Some(n) = quarantine(s.keys[k].as_deref(), epoch) {
                        r.changed = true;
                        s.keys[k] = Some(n);
                    }
                }
            }
        }
        r.step += 1;
        true
    }

    fn recon_done(&self, r: &Recon) -> bool {
        usize::from(r.step) > usize::from(self.bounds.resources)
    }

    /// A whole reconcile run with nothing in between; `false` when it stopped.
    fn recon_atomic(&self, s: &mut State) -> bool {
        let mut r = self.recon_read(s);
        while !self.recon_done(&r) {
            if !self.recon_step(s, &mut r) {
                return false;
            }
        }
        true
    }
}

impl Model for FenceModel {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        let n = usize::from(self.bounds.resources);
        vec![State {
            now: 0,
            issuer: None,
            issuer_backup: None,
            issuer_pending: None,
            keys: vec![None; n],
            key_backups: vec![None; n],
            data: vec![BTreeMap::new(); n],
            data_backups: vec![BTreeMap::new(); n],
            txs: BTreeSet::new(),
            clients: vec![
                Client {
                    phase: Phase::Idle,
                    acq: 0
                };
                usize::from(self.bounds.clients)
            ],
            net: BTreeSet::new(),
            recon: None,
            budget: Budget {
                snapshots: self.bounds.snapshots,
                restores: self.bounds.restores,
                reconciles: self.bounds.reconciles,
                crashes: self.bounds.crashes,
                aborts: self.bounds.aborts,
            },
            ghost: Ghost {
                established: vec![0; n],
                writers_at: vec![BTreeMap::new(); n],
                applied: vec![BTreeSet::new(); n],
                ..Ghost::default()
            },
        }]
    }

    fn actions(&self, s: &State, out: &mut Vec<Action>) {
        if s.now < self.bounds.max_time {
            out.push(Action::Tick);
        }
        for (i, c) in s.clients.iter().enumerate() {
            let i = i as u8;
            match c.phase {
                Phase::Idle => {
                    if c.acq < self.bounds.acquisitions {
                        out.push(Action::Acquire(i));
                    }
                }
                Phase::Acquiring => {}
                Phase::Holding { step, .. } => {
                    if step < self.lease_steps() {
                        out.push(Action::Send(i));
                    } else if self.bounds.release {
                        out.push(Action::Release(i));
                    }
                }
            }
            if c.phase != Phase::Idle && s.budget.crashes > 0 {
                out.push(Action::Crash(i));
            }
        }
        // A message sent stays in flight for ever: each may be delivered any
        // number of times (duplicates, retries with the same id), in any
        // order, after any delay, or never (lost). Consuming or dropping
        // messages would only add states that these already cover.
        // An operation on a key whose row lock an open transaction holds waits for it.
        out.extend(
            s.net
                .iter()
                .filter(|m| !matches!(m, Msg::Op { key, .. } if self.locked(s, *key)))
                .map(|m| Action::Deliver(m.clone())),
        );
        for tx in &s.txs {
            out.push(Action::Commit(tx.clone()));
            if s.budget.aborts > 0 {
                out.push(Action::Abort(tx.clone()));
            }
        }
        if s.issuer_pending.is_some() {
            out.push(Action::IssuerPersist);
            out.push(Action::IssuerCrash);
        }
        let mut targets = vec![Target::Issuer];
        targets.extend((0..self.bounds.resources).map(Target::Resource));
        if s.budget.snapshots > 0 {
            out.extend(targets.iter().map(|t| Action::Snapshot(*t)));
        }
        if s.budget.restores > 0 {
            out.extend(targets.iter().map(|t| Action::Restore(*t)));
        }
        match &s.recon {
            None if s.budget.reconciles > 0 => out.push(Action::ReconcileRead),
            None => {}
            // its write to a key waits for that key's row lock
            Some(r) if r.step > 0 && self.locked(s, r.step - 1) => {}
            Some(_) => out.push(Action::ReconcileStep),
        }
    }

    fn next_state(&self, last: &State, action: Action) -> Option<State> {
        let mut s = last.clone();
        let mut restored: Option<Target> = None;
        let reconciling = matches!(action, Action::ReconcileRead | Action::ReconcileStep);
        match action {
            Action::Tick => s.now += 1,
            Action::Acquire(i) => {
                let c = &mut s.clients[usize::from(i)];
                c.acq += 1;
                c.phase = Phase::Acquiring;
                s.net.insert(Msg::Acquire((i, c.acq)));
            }
            Action::Send(i) => {
                let c = &mut s.clients[usize::from(i)];
                let Phase::Holding {
                    epoch,
                    expires,
                    step,
                } = c.phase
                else {
                    return None;
                };
                let (key, kind) = self.op_of(step);
                c.phase = Phase::Holding {
                    epoch,
                    expires,
                    step: step + 1,
                };
                let who = (i, c.acq);
                s.net.insert(Msg::Op {
                    who,
                    key,
                    epoch,
                    expires,
                    kind,
                });
            }
            Action::Release(i) => {
                let c = &mut s.clients[usize::from(i)];
                let Phase::Holding { epoch, .. } = c.phase else {
                    return None;
                };
                c.phase = Phase::Idle;
                let who = (i, c.acq);
                s.net.insert(Msg::Release(who, epoch));
            }
            Action::Crash(i) => {
                s.clients[usize::from(i)].phase = Phase::Idle;
                s.budget.crashes -= 1;
            }
            Action::Deliver(m) => self.deliver(&mut s, &m),
            Action::IssuerPersist => {
                s.issuer = s.issuer_pending.take();
            }
            Action::IssuerCrash => {
                s.issuer_pending = None;
            }
            Action::Snapshot(t) => {
                s.budget.snapshots -= 1;
                match t {
                    Target::Issuer => s.issuer_backup = s.issuer.clone(),
                    Target::Resource(k) => {
                        let k = usize::from(k);
                        s.key_backups[k] = s.keys[k].clone();
                        s.data_backups[k] = s.data[k].clone();
                    }
                }
            }
            Action::Restore(t) => {
                s.budget.restores -= 1;
                restored = Some(t);
                let g = &mut s.ghost;
                g.restored = true;
                match t {
                    Target::Issuer => {
                        s.issuer = s.issuer_backup.clone();
                        s.issuer_pending = None;
                        g.issued.clear();
                        g.issuer_restored = true;
                        g.reconciled = false;
                        if let Some(r) = &mut s.recon {
                            r.blind = true;
                        }
                    }
                    Target::Resource(k) => {
                        // The caller's table is in the same database: restored with
                        // the fence table; transactions open there are gone.
                        s.txs.retain(|t| t.key != k);
                        let k = usize::from(k);
                        s.keys[k] = s.key_backups[k].clone();
                        s.data[k] = s.data_backups[k].clone();
                        g.established[k] = 0;
                        g.writers_at[k].clear();
                        g.applied[k].clear();
                    }
                }
            }
            Action::ReconcileRead => {
                s.budget.reconciles -= 1;
                s.recon = Some(self.recon_read(&s));
            }
            Action::ReconcileStep => {
                let mut r = s.recon.take()?;
                if self.recon_step(&mut s, &mut r) {
                    if self.recon_done(&r) {
                        if !r.blind {
                            s.ghost.reconciled = true;
                        }
                        if r.changed && s.ghost.restored {
                            s.ghost.seen |= seen::RECONCILE_REPAIRED;
                        }
                        if !r.interleaved {
                            // Running it again right away must change nothing.
                            let mut again = s.clone();
                            if self.recon_atomic(&mut again)
                                && (again.issuer != s.issuer || again.keys != s.keys)
                            {
                                s.ghost.violated |= flag::RECONCILE_NOT_IDEMPOTENT;
                            }
                        }
                    } else {
                        s.recon = Some(r);
                    }
                }
            }
            Action::Commit(tx) => {
                s.txs.remove(&tx);
                self.commit_txn(&mut s, &tx);
            }
            Action::Abort(tx) => {
                s.txs.remove(&tx);
                s.budget.aborts -= 1;
                s.ghost.rolled_back.insert(tx.effect);
            }
        }
        if !reconciling {
            if let Some(r) = &mut s.recon {
                r.interleaved = true;
            }
        }
        // (a): no mark goes down, except the key whose own store was restored.
        for (k, (before, after)) in last.keys.iter().zip(&s.keys).enumerate() {
            if before != after
                && restored != Some(Target::Resource(k as u8))
                && mark_of(after) < mark_of(before)
            {
                s.ghost.violated |= flag::MARK_LOWERED;
            }
        }
        // (g): an effect reaches the caller's data only in a step after which
        // the key's fence record holds its operation as applied (a retry of it
        // answers duplicate) — never with a refusal, a duplicate or before the
        // decision. A restore brings back both tables of one snapshot.
        for (k, (before, after)) in last.data.iter().zip(&s.data).enumerate() {
            if before == after || restored == Some(Target::Resource(k as u8)) {
                continue;
            }
            for (effect, count) in after {
                if before.get(effect).is_some_and(|b| b >= count) {
                    continue;
                }
                let (epoch, who, _) = *effect;
                let recorded = gate_op(
                    s.keys[k].as_deref(),
                    epoch,
                    false,
                    Some(&op_id_of(k as u8, *effect)),
                    Some(&holder_id(who)),
                    self.bounds.window,
                    GateVariant::Real,
                );
                if recorded.answer != Answer::Duplicate {
                    s.ghost.violated |= flag::EFFECT_WITHOUT_APPLY;
                }
            }
        }
        Some(s)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        fn ok(s: &State, f: u16) -> bool {
            s.ghost.violated & f == 0
        }
        vec![
            Property::always("(a) a mark never decreases, except by a restore of its own store", |_, s| {
                ok(s, flag::MARK_LOWERED)
            }),
            Property::always(
                "(b) no write below an epoch established at a resource lands there (unless that resource was restored)",
                |_, s| ok(s, flag::WRITE_BELOW_ESTABLISHED),
            ),
            Property::always(
                "(c) no two holders have a write accepted at one epoch at one resource (unless that resource was restored)",
                |_, s| ok(s, flag::TWO_HOLDERS_AT_KEY),
            ),
            Property::always(
                "(c) no two holders have a write accepted at one epoch anywhere (unless the issuer's store was ever restored)",
                |_, s| ok(s, flag::TWO_HOLDERS),
            ),
            Property::always(
                "(d) the issuer never grants one epoch twice (unless its store was restored)",
                |_, s| ok(s, flag::EPOCH_TWICE),
            ),
            Property::always(
                "(d) after reconcile the issuer never grants an epoch at or below a mark",
                |_, s| ok(s, flag::GRANT_AT_OR_BELOW_MARK),
            ),
            Property::always(
                "(e) an op id applies at most once per epoch (unless that resource was restored)",
                |_, s| ok(s, flag::OP_TWICE),
            ),
            Property::always("a refusal writes nothing", |_, s| ok(s, flag::REFUSAL_WROTE)),
            Property::always("reconcile run twice changes nothing the second time", |_, s| {
                ok(s, flag::RECONCILE_NOT_IDEMPOTENT)
            }),
            Property::always(
                "(g) own data: the caller's statements take effect only with a decision that applies, never with a refusal or a duplicate",
                |_, s| ok(s, flag::EFFECT_WITHOUT_APPLY),
            ),
            Property::always(
                "(h) own data: each op id's effect is in the caller's data at most once, retries after a lost reply included",
                |_, s: &State| s.data.iter().all(|d| d.values().all(|&c| c <= 1)),
            ),
            Property::always(
                "(i) own data: no effect below an epoch established at a resource lands there (unless that resource was restored)",
                |_, s| ok(s, flag::EFFECT_BELOW_ESTABLISHED),
            ),
            Property::always(
                "(j) own data: a transaction answered duplicate has its effect in the caller's data",
                |_, s| ok(s, flag::ACKED_EFFECT_MISSING),
            ),
            Property::sometimes("(f) a paused client's late write is refused", |_, s: &State| {
                s.ghost.seen & seen::LATE_WRITE_REFUSED != 0
            }),
            Property::sometimes("a retried op id answers duplicate", |_, s: &State| {
                s.ghost.seen & seen::DUPLICATE != 0
            }),
            Property::sometimes("an evicted op id answers OP_ID_EXPIRED", |_, s: &State| {
                s.ghost.seen & seen::OP_ID_EXPIRED != 0
            }),
            Property::sometimes("one epoch handed out twice answers EPOCH_CONFLICT", |_, s: &State| {
                s.ghost.seen & seen::EPOCH_CONFLICT != 0
            }),
            Property::sometimes("a quarantined key refuses an old epoch", |_, s: &State| {
                s.ghost.seen & seen::QUARANTINED != 0
            }),
            Property::sometimes("reconcile repairs after a restore", |_, s: &State| {
                s.ghost.seen & seen::RECONCILE_REPAIRED != 0
            }),
            Property::sometimes(
                "own data: a paused client's late transaction is refused (its statements never run)",
                |_, s: &State| s.ghost.seen & seen::LATE_TXN_REFUSED != 0,
            ),
            Property::sometimes(
                "own data: a retried transaction answers duplicate (its statements do not run again)",
                |_, s: &State| s.ghost.seen & seen::TXN_DUPLICATE != 0,
            ),
            Property::sometimes(
                "own data: a transaction rolled back after its fence step commits on its retry",
                |_, s: &State| s.ghost.seen & seen::TXN_ROLLED_BACK_RETRIED != 0,
            ),
        ]
    }
}

impl State {
    /// One line per store, the clock and the messages in flight.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "    now={}ms", self.now);
        let _ = writeln!(
            out,
            "    issuer store: {}",
            self.issuer.as_deref().unwrap_or("(no record)")
        );
        if let Some(p) = &self.issuer_pending {
            let _ = writeln!(out, "    issuer answered but not yet written: {p}");
        }
        for (k, t) in self.keys.iter().enumerate() {
            let _ = writeln!(
                out,
                "    key r{k}: {}",
                t.as_deref().unwrap_or("(no record)")
            );
        }
        for (k, d) in self.data.iter().enumerate() {
            if !d.is_empty() {
                let rows: Vec<String> = d
                    .iter()
                    .map(|(e, c)| {
                        let times = if *c == 1 {
                            String::new()
                        } else {
                            format!(" ×{c}")
                        };
                        format!("{} at epoch {}{times}", op_id_of(k as u8, *e), e.0)
                    })
                    .collect();
                let _ = writeln!(out, "    r{k}'s caller table: {}", rows.join(", "));
            }
        }
        for t in &self.txs {
            let _ = writeln!(out, "    open transaction: {}", describe_tx(t));
        }
        for (i, c) in self.clients.iter().enumerate() {
            let _ = writeln!(
                out,
                "    client c{i}: {:?} (acquisition {})",
                c.phase, c.acq
            );
        }
        if !self.net.is_empty() {
            let _ = writeln!(
                out,
                "    in flight: {}",
                self.net
                    .iter()
                    .map(describe_msg)
                    .collect::<Vec<_>>()
                    .join("; ")
            );
        }
        out
    }
}

/// A message in words.
pub fn describe_msg(m: &Msg) -> String {
    match m {
        Msg::Acquire(w) => format!(
            "acquire(holder {}, requestId {})",
            holder_id(*w),
            holder_id(*w)
        ),
        Msg::Reply(w, a) => format!("reply to {}: {a:?}", holder_id(*w)),
        Msg::Release(w, e) => format!("release(lease of epoch {e}) by {}", holder_id(*w)),
        Msg::Op {
            who,
            key,
            epoch,
            kind,
            ..
        } => match kind {
            OpKind::Establish => format!("establish(r{key}, {epoch}, holder {})", holder_id(*who)),
            OpKind::Write(n) => format!(
                "write(r{key}, {epoch}, holder {h}, opId {h}.r{key}.w{n})",
                h = holder_id(*who)
            ),
            OpKind::Txn(n) => format!(
                "transaction(r{key}, {epoch}, statements, holder {h}, opId {h}.r{key}.w{n})",
                h = holder_id(*who)
            ),
        },
    }
}

/// An open transaction in words.
pub fn describe_tx(t: &OpenTx) -> String {
    let mut parts = Vec::new();
    if t.fence.is_some() {
        parts.push("the next fence record");
    }
    if t.runs_body {
        parts.push("the caller's statements");
    }
    let what = if parts.is_empty() {
        "nothing".to_string()
    } else {
        parts.join(" and ")
    };
    format!(
        "{} at epoch {} on r{} (to commit: {what})",
        op_id_of(t.key, t.effect),
        t.effect.0,
        t.key
    )
}

/// An action in words.
pub fn describe_action(a: &Action) -> String {
    match a {
        Action::Tick => "the clock advances 1 ms".into(),
        Action::Acquire(i) => format!("client c{i} sends an acquire"),
        Action::Send(i) => format!("client c{i} sends its next operation"),
        Action::Release(i) => format!("client c{i} releases its lease"),
        Action::Crash(i) => format!("client c{i} crashes (forgets its lease)"),
        Action::Deliver(m) => format!("deliver {}", describe_msg(m)),
        Action::IssuerPersist => "the issuer's pending write reaches its store".into(),
        Action::IssuerCrash => "the issuer process crashes: its pending write is lost".into(),
        Action::Snapshot(Target::Issuer) => "snapshot the issuer's store".into(),
        Action::Snapshot(Target::Resource(k)) => format!("snapshot key r{k}'s store"),
        Action::Restore(Target::Issuer) => "RESTORE the issuer's store from its snapshot".into(),
        Action::Restore(Target::Resource(k)) => {
            format!("RESTORE key r{k}'s store from its snapshot")
        }
        Action::ReconcileRead => "reconcile reads the issuer's and every key's record".into(),
        Action::ReconcileStep => "reconcile performs its next write".into(),
        Action::Commit(t) => format!("COMMIT of {}", describe_tx(t)),
        Action::Abort(t) => format!("ROLLBACK of {}", describe_tx(t)),
    }
}

/// A path as numbered steps, each with the state after it.
pub fn describe_path(path: &stateright::Path<State, Action>) -> String {
    let mut out = String::new();
    let steps = path.clone().into_vec();
    if let Some((first, _)) = steps.first() {
        let _ = writeln!(out, "  0. initial state\n{}", first.summary());
    }
    for (i, w) in steps.windows(2).enumerate() {
        let (_, action) = &w[0];
        let (after, _) = &w[1];
        if let Some(a) = action {
            let _ = writeln!(
                out,
                "  {}. {}\n{}",
                i + 1,
                describe_action(a),
                after.summary()
            );
        }
    }
    out
}

/// The outcome of one exhaustive run.
#[derive(Debug)]
pub struct Run {
    /// Unique states explored.
    pub unique_states: usize,
    /// States generated, repeats included.
    pub states: usize,
    /// The deepest path explored.
    pub max_depth: usize,
    /// Wall-clock time.
    pub elapsed: std::time::Duration,
    /// `always` properties with a counterexample: name and the trace, in words.
    pub counterexamples: Vec<(&'static str, String)>,
    /// `sometimes` properties with no example found.
    pub unreached: Vec<&'static str>,
    /// `sometimes` properties reached: name and the number of steps to the example.
    pub reached: Vec<(&'static str, usize)>,
}

impl FenceModel {
    /// Explores every reachable state (breadth first, so each trace found is a
    /// shortest one). `stop_at_first_failure` ends the run at the first
    /// counterexample (the teeth tests).
    pub fn run(self, threads: usize, stop_at_first_failure: bool, limit: Option<usize>) -> Run {
        use stateright::{Checker, Expectation, HasDiscoveries};
        let started = std::time::Instant::now();
        let props = self.properties();
        let mut builder = self.checker().threads(threads);
        if stop_at_first_failure {
            builder = builder.finish_when(HasDiscoveries::AnyFailures);
        }
        if let Some(n) = limit {
            builder = builder.target_state_count(n);
        }
        let checker = builder.spawn_bfs().join();
        let elapsed = started.elapsed();
        let discoveries = checker.discoveries();
        let mut run = Run {
            unique_states: checker.unique_state_count(),
            states: checker.state_count(),
            max_depth: checker.max_depth(),
            elapsed,
            counterexamples: Vec::new(),
            unreached: Vec::new(),
            reached: Vec::new(),
        };
        for p in props {
            let found = discoveries.get(p.name);
            match (p.expectation, found) {
                (Expectation::Sometimes, Some(path)) => run
                    .reached
                    .push((p.name, path.clone().into_actions().len())),
                (Expectation::Sometimes, None) => run.unreached.push(p.name),
                (_, Some(path)) => run.counterexamples.push((p.name, describe_path(path))),
                (_, None) => {}
            }
        }
        run
    }
}
