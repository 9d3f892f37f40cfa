//! The embedded in-memory store: one mark and one value per resource key,
//! checked and changed in one step.
//!
//! The whole check-and-apply happens inside one `&mut self` call, so there is
//! no window between the comparison and the write (DESIGN R1). A rejection
//! returns before anything is touched (R3); the mark only moves up (R5).

use std::borrow::Borrow;
use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hash};

use crate::decision::{decide, settle, OpMeta, Operation, SameEpoch, Verdict};
use crate::error::TokenError;
use crate::state::ResourceState;

/// One resource key's state and protected value.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry<V> {
    /// The decoded state (the mark).
    pub state: ResourceState,
    /// The protected value; `None` until the first applied write
    /// (an `establish` alone records a mark but no value).
    pub value: Option<V>,
}

/// An in-memory fenced store for Rust users: resource keys of type `K` (e.g.
/// `String`), values of type `V`, hashed with `S` (SipHash by default: keys may
/// be chosen by clients). The JS binding's `RawMemoryGate` does not use it: it
/// keeps its states in a vector indexed by the slots JS hands out in order.
#[derive(Clone, Debug)]
pub struct MemoryStore<K, V, S = RandomState> {
    same_epoch: SameEpoch,
    entries: HashMap<K, Entry<V>, S>,
}

impl<K: Hash + Eq, V> MemoryStore<K, V> {
    /// An empty store with the given same-epoch rule.
    pub fn new(same_epoch: SameEpoch) -> Self {
        Self::with_hasher(same_epoch, RandomState::new())
    }
}

impl<K: Hash + Eq, V, S: BuildHasher> MemoryStore<K, V, S> {
    /// An empty store hashing keys with `hasher`.
    pub fn with_hasher(same_epoch: SameEpoch, hasher: S) -> Self {
        MemoryStore {
            same_epoch,
            entries: HashMap::with_hasher(hasher),
        }
    }

    /// The same-epoch rule in force.
    pub fn same_epoch(&self) -> SameEpoch {
        self.same_epoch
    }

    /// Fenced write: applies `value` to `key` when the token advances or is
    /// accepted; a rejected write (including a missing/malformed token) changes nothing.
    pub fn write<Q>(&mut self, key: &Q, token: Result<u64, TokenError>, value: V) -> Verdict
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        self.apply(key, token, Operation::Write, Some(value), &OpMeta::NONE)
    }

    /// Establish: raise the mark of `key` to `token` with no data change.
    pub fn establish<Q>(&mut self, key: &Q, token: Result<u64, TokenError>) -> Verdict
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        self.apply(key, token, Operation::Establish, None, &OpMeta::NONE)
    }

    /// A write or establish with an operation id and/or holder ([`settle`]).
    /// `value` is `None` for establish.
    pub fn apply<Q>(
        &mut self,
        key: &Q,
        token: Result<u64, TokenError>,
        op: Operation,
        value: Option<V>,
        meta: &OpMeta<'_>,
    ) -> Verdict
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let same_epoch = self.same_epoch;
        self.apply_with(key, op, value, meta, |mark| match token {
            Ok(t) => decide(mark, t, same_epoch, op),
            Err(e) => Verdict::invalid_token(mark, &e),
        })
    }

    /// The general form: `check` gets the current mark and makes the
    /// epoch-level verdict (plain [`decide`], or a gate policy); then
    /// [`settle`] applies holder and operation-id semantics. Check and apply
    /// happen in this one `&mut` call; a verdict that does not apply changes
    /// nothing, and the mark only ever rises (R5).
    pub fn apply_with<Q>(
        &mut self,
        key: &Q,
        op: Operation,
        value: Option<V>,
        meta: &OpMeta<'_>,
        check: impl FnOnce(u64) -> Verdict,
    ) -> Verdict
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        self.apply_claimed(key, op, value, meta, |mark| (check(mark), None))
    }

    /// [`MemoryStore::apply_with`] where `check` may also name the holder the
    /// token itself carries (a signed token's lease id); that holder, when
    /// named, takes precedence over the operation's own `meta.holder`.
    pub fn apply_claimed<Q>(
        &mut self,
        key: &Q,
        op: Operation,
        value: Option<V>,
        meta: &OpMeta<'_>,
        check: impl FnOnce(u64) -> (Verdict, Option<String>),
    ) -> Verdict
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        let entries = &mut self.entries;
        match entries.get_mut(key) {
            Some(entry) => apply_to(Some(entry), op, value, meta, check, |_| {}),
            None => apply_to(None, op, value, meta, check, |entry| {
                entries.insert(key.to_owned(), entry);
            }),
        }
    }

    /// Quarantine `key` at `floor` (decision record reconcile-planner,
    /// [`ResourceState::quarantine_at`]):
    /// epochs up to `max(floor, mark)` are refused with `QUARANTINED` until a
    /// larger one is written or established. The mark never lowers. Returns
    /// `false` when nothing changed.
    pub fn quarantine<Q>(&mut self, key: &Q, floor: u64) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ToOwned<Owned = K> + ?Sized,
    {
        match self.entries.get_mut(key) {
            Some(entry) => entry.state.quarantine_at(floor),
            None => {
                self.entries.insert(key.to_owned(), quarantined(floor));
                true
            }
        }
    }

    /// The mark of `key` (0 = never written).
    pub fn mark<Q>(&self, key: &Q) -> u64
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.entries.get(key).map_or(0, |e| e.state.mark)
    }

    /// The entry of `key`, if any operation was ever applied to it.
    pub fn get<Q>(&self, key: &Q) -> Option<&Entry<V>>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.entries.get(key)
    }

    /// All keys that have an entry, in no particular order.
    pub fn keys(&self) -> impl Iterator<Item = &K> {
        self.entries.keys()
    }
}

/// The check-and-apply of one key, whatever holds the entries
/// ([`MemoryStore::apply_claimed`] and the binding's slot vector,
/// `RawMemoryGate`): `entry` is the key's entry (`None`: it has no state
/// yet). `check` makes the epoch-level verdict from the mark and may name the
/// holder the token carries; [`settle`] applies it. An existing entry is
/// changed in place, and takes `value` when the verdict applies and `value` is
/// `Some`; a new key's entry goes to `insert` when the verdict applies. A
/// verdict that does not apply changes nothing.
#[inline]
pub(crate) fn apply_to<V>(
    entry: Option<&mut Entry<V>>,
    op: Operation,
    value: Option<V>,
    meta: &OpMeta<'_>,
    check: impl FnOnce(u64) -> (Verdict, Option<String>),
    insert: impl FnOnce(Entry<V>),
) -> Verdict {
    // A signed token's verified lease id is the holder, whatever `holder` the
    // operation names: a self-declared name cannot make two owners of one
    // epoch look like one ([`OpMeta::claimed_by`]).
    fn with_claim<'a>(meta: &OpMeta<'a>, claimed: &'a Option<String>) -> OpMeta<'a> {
        meta.claimed_by(claimed.as_deref())
    }
    if let Some(entry) = entry {
        let (epoch_verdict, claimed) = check(entry.state.mark);
        let verdict = settle(
            &mut entry.state,
            epoch_verdict,
            op,
            &with_claim(meta, &claimed),
        );
        if verdict.applies() && value.is_some() {
            entry.value = value;
        }
        return verdict;
    }
    let mut state = ResourceState::default();
    let (epoch_verdict, claimed) = check(0);
    let verdict = settle(&mut state, epoch_verdict, op, &with_claim(meta, &claimed));
    if verdict.applies() {
        insert(Entry { state, value });
    }
    verdict
}

/// The entry of a key with no state that is quarantined at `floor`.
pub(crate) fn quarantined<V>(floor: u64) -> Entry<V> {
    let mut state = ResourceState::default();
    state.quarantine_at(floor);
    Entry { state, value: None }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decision::Outcome;
    use crate::error::Code;

    /// The seed article's fencing.py, step by step.
    #[test]
    fn seed_scenario() {
        let mut r: MemoryStore<String, &str> = MemoryStore::new(SameEpoch::Allow);
        let (old, new) = (1, 2);
        assert_eq!(
            r.write("k", Ok(old), "arrived-before-new-epoch").outcome,
            Outcome::Advance
        );
        assert_eq!(
            r.write("k", Ok(new), "from-new-leader").outcome,
            Outcome::Advance
        );
        let v = r.write("k", Ok(old), "must-not-land");
        assert_eq!((v.code, v.mark_after), (Some(Code::StaleToken), 2));
        assert_eq!(r.get("k").unwrap().value, Some("from-new-leader"));
        assert_eq!(
            r.write("k", Ok(new), "second-write-in-same-epoch").outcome,
            Outcome::Accept
        );
        let v = r.write("k", Err(TokenError::Missing), "must-not-land");
        assert_eq!(v.code, Some(Code::MissingToken));
        assert_eq!(r.write("k", Ok(3), "newest").outcome, Outcome::Advance);
        assert_eq!(
            r.write("k", Ok(new), "must-not-land").code,
            Some(Code::StaleToken)
        );
        assert_eq!(
            (r.mark("k"), r.get("k").unwrap().value),
            (3, Some("newest"))
        );
    }

    #[test]
    fn keys_are_independent_and_establish_has_no_data() {
        let mut r: MemoryStore<String, u32> = MemoryStore::new(SameEpoch::Allow);
        assert_eq!(r.establish("a", Ok(7)).outcome, Outcome::Advance);
        assert_eq!(r.mark("a"), 7);
        assert_eq!(r.get("a").unwrap().value, None);
        assert_eq!(r.mark("b"), 0);
        assert!(r.get("b").is_none());
        assert_eq!(r.write("a", Ok(6), 1).code, Some(Code::StaleToken));
        assert_eq!(r.get("a").unwrap().value, None);
    }

    #[test]
    fn quarantine_keeps_the_value_and_lifts_on_a_new_epoch() {
        let mut r: MemoryStore<String, u32> = MemoryStore::new(SameEpoch::Allow);
        r.write("k", Ok(5), 1);
        assert!(r.quarantine("k", 3));
        assert!(!r.quarantine("k", 5));
        assert_eq!(r.mark("k"), 5);
        assert_eq!(r.write("k", Ok(5), 2).code, Some(Code::Quarantined));
        assert_eq!(r.get("k").unwrap().value, Some(1));
        assert_eq!(r.write("k", Ok(6), 3).outcome, Outcome::Advance);
        assert_eq!(r.get("k").unwrap().state.quarantine, None);
        assert!(r.quarantine("fresh", 9));
        assert_eq!(r.establish("fresh", Ok(9)).code, Some(Code::Quarantined));
        assert_eq!(r.establish("fresh", Ok(10)).outcome, Outcome::Advance);
    }

    #[test]
    fn rejected_first_write_creates_nothing() {
        let mut r: MemoryStore<String, u32> = MemoryStore::new(SameEpoch::Strict);
        let v = r.write("k", Err(TokenError::Malformed("x")), 1);
        assert_eq!(
            (v.code, v.mark_before, v.mark_after),
            (Some(Code::MalformedToken), 0, 0)
        );
        assert!(r.get("k").is_none());
        r.write("k", Ok(2), 1);
        let v = r.write("k", Ok(2), 5);
        assert_eq!(v.code, Some(Code::SameEpochRejected));
        assert_eq!(r.get("k").unwrap().value, Some(1));
    }
}
