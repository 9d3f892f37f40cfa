//! Operation ids: a bounded, per-epoch window of applied operations, so a
//! retried write is answered `duplicate` instead of applied twice (DESIGN R10).
//!
//! Equal epochs say nothing about duplicates: one owner writes many times per
//! epoch. A write may carry an operation id; the gate keeps the last
//! `capacity` ids applied in the current epoch **in the key's stored state**,
//! committed atomically with the write, and clears them when the epoch
//! advances.
//!
//! Retention, exactly: the last `capacity` ids of the epoch are known for
//! certain (a repeat is `duplicate`). Ids pushed out of the window are then
//! remembered in a Bloom filter of two 1024-bit generations (k = 3, FNV-1a
//! double hashing): an id found there answers `OP_ID_EXPIRED` ("dedup state
//! expired: it may already have been applied") instead of being applied as
//! new. The current generation takes evicted ids until 175 of its bits are
//! set (about 64 ids, at least 58); then it becomes the previous generation
//! and the old previous one is dropped. So at least the last 58 evicted ids
//! (usually 64–128) are never mistaken for new, ids evicted longer ago are
//! forgotten, and the chance that a genuinely new id is refused stays below
//! about 1 % however long the epoch runs. Size the window to cover your retry
//! horizon; the filter is the safety net. Both are cleared when the epoch
//! advances.

use std::collections::VecDeque;

/// The longest holder accepted, in UTF-8 bytes.
pub const MAX_HOLDER_BYTES: usize = 256;
/// The longest operation id accepted, in UTF-8 bytes.
pub const MAX_OP_ID_BYTES: usize = 128;
/// The largest window a gate may be configured with.
pub const MAX_WINDOW: usize = 1024;
/// The default number of operation ids kept per key and epoch.
pub const DEFAULT_WINDOW: usize = 64;
/// Size of the evicted-id Bloom filter in bytes: two generations of 1024 bits,
/// the current one first.
pub const BLOOM_BYTES: usize = 256;
const GENERATION_BYTES: usize = BLOOM_BYTES / 2;
const GENERATION_BITS: u64 = (GENERATION_BYTES * 8) as u64;
const BLOOM_K: u64 = 3;
/// Set bits at which the current generation is retired (about 64 ids in 1024
/// bits with k = 3; false-positive rate of a full generation about 0.5 %).
const ROTATE_AT_BITS: u32 = 175;

/// Checks an operation id: 1..=128 UTF-8 bytes, no control characters.
pub fn valid_op_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= MAX_OP_ID_BYTES && !id.chars().any(char::is_control)
}

/// One applied operation: its id and the mark before it (the outcome is
/// derived: `mark_before < epoch` means it advanced, otherwise it accepted).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpRecord {
    /// The operation id.
    pub id: String,
    /// The mark before the operation was applied.
    pub mark_before: u64,
}

/// What the window knows about an id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Seen<'a> {
    /// Applied in this epoch and still in the window.
    Applied(&'a OpRecord),
    /// Possibly applied in this epoch, but pushed out of the window.
    Expired,
    /// Not applied in this epoch (as far as the gate can tell exactly).
    New,
}

/// The per-epoch window of applied operation ids of one key.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OpWindow {
    /// The ids in the window, oldest first.
    pub ops: VecDeque<OpRecord>,
    /// The Bloom filter of ids pushed out of the window in this epoch;
    /// `None` until the first eviction.
    pub evicted: Option<Box<[u8; BLOOM_BYTES]>>,
}

fn fnv1a(bytes: &[u8], seed: u64) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325_u64 ^ seed;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

fn bloom_bits(id: &str) -> [usize; BLOOM_K as usize] {
    let h1 = fnv1a(id.as_bytes(), 0);
    let h2 = fnv1a(id.as_bytes(), 0x9e37_79b9_7f4a_7c15) | 1;
    let mut out = [0usize; BLOOM_K as usize];
    for (i, slot) in out.iter_mut().enumerate() {
        *slot = (h1.wrapping_add((i as u64).wrapping_mul(h2)) % GENERATION_BITS) as usize;
    }
    out
}

impl OpWindow {
    /// Whether the window holds nothing (no ids, nothing evicted).
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty() && self.evicted.is_none()
    }

    /// Looks an id up.
    pub fn seen(&self, id: &str) -> Seen<'_> {
        if let Some(r) = self.ops.iter().find(|r| r.id == id) {
            return Seen::Applied(r);
        }
        if let Some(filter) = &self.evicted {
            let bits = bloom_bits(id);
            let (current, previous) = filter.split_at(GENERATION_BYTES);
            let hit = |g: &[u8]| bits.iter().all(|&bit| g[bit / 8] & (1 << (bit % 8)) != 0);
            if hit(current) || hit(previous) {
                return Seen::Expired;
            }
        }
        Seen::New
    }

    /// Records an applied id, pushing the oldest out when `capacity` is reached.
    pub fn push(&mut self, record: OpRecord, capacity: usize) {
        let capacity = capacity.clamp(1, MAX_WINDOW);
        while self.ops.len() >= capacity {
            if let Some(old) = self.ops.pop_front() {
                let filter = self
                    .evicted
                    .get_or_insert_with(|| Box::new([0; BLOOM_BYTES]));
                let set: u32 = filter[..GENERATION_BYTES]
                    .iter()
                    .map(|b| b.count_ones())
                    .sum();
                if set >= ROTATE_AT_BITS {
                    filter.copy_within(0..GENERATION_BYTES, GENERATION_BYTES);
                    filter[..GENERATION_BYTES].fill(0);
                }
                for bit in bloom_bits(&old.id) {
                    filter[bit / 8] |= 1 << (bit % 8);
                }
            }
        }
        self.ops.push_back(record);
    }

    /// Forgets everything (the epoch advanced).
    pub fn clear(&mut self) {
        self.ops.clear();
        self.evicted = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(id: &str) -> OpRecord {
        OpRecord {
            id: id.to_owned(),
            mark_before: 5,
        }
    }

    #[test]
    fn window_of_three_remembers_the_evicted() {
        let mut w = OpWindow::default();
        for id in ["a", "b", "c", "d"] {
            assert_eq!(w.seen(id), Seen::New);
            w.push(rec(id), 3);
        }
        assert_eq!(
            w.ops.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
            ["b", "c", "d"]
        );
        assert_eq!(w.seen("a"), Seen::Expired);
        assert_eq!(w.seen("b"), Seen::Applied(&rec("b")));
        assert_eq!(w.seen("e"), Seen::New);
        w.clear();
        assert_eq!(w.seen("a"), Seen::New);
        assert!(w.is_empty());
    }

    #[test]
    fn op_id_rules() {
        assert!(valid_op_id("r1"));
        assert!(valid_op_id(&"x".repeat(128)));
        assert!(!valid_op_id(&"x".repeat(129)));
        assert!(!valid_op_id(""));
        assert!(!valid_op_id("a\nb"));
    }

    /// However long the epoch, a brand-new id is refused rarely (the filter
    /// cannot saturate), and the most recently evicted ids are always caught.
    #[test]
    fn the_filter_never_saturates() {
        let mut w = OpWindow::default();
        let mut evicted = 0;
        for i in 0..20_000 {
            w.push(rec(&format!("op-{i}")), 64);
            evicted = (i + 1usize).saturating_sub(64);
            if i % 997 == 0 && evicted > 58 {
                // The last 58 evicted ids are always remembered.
                for j in (evicted - 58)..evicted {
                    assert_eq!(
                        w.seen(&format!("op-{j}")),
                        Seen::Expired,
                        "op-{j} after {i}"
                    );
                }
            }
        }
        assert!(evicted > 19_000);
        let fp = (0..20_000)
            .filter(|i| w.seen(&format!("fresh-{i}")) == Seen::Expired)
            .count();
        assert!(
            fp < 250,
            "false positives {fp} / 20000 after {evicted} evictions"
        );
        // Ids evicted long ago are forgotten (treated as new), as documented.
        assert_eq!(w.seen("op-100"), Seen::New);
    }

    #[test]
    fn false_positive_rate_is_as_documented() {
        let mut w = OpWindow::default();
        for i in 0..(128 + 1) {
            w.push(rec(&format!("op-{i}")), 1);
        }
        // 128 ids evicted; probe 10 000 fresh ids (expected about 0.5 %).
        let fp = (0..10_000)
            .filter(|i| w.seen(&format!("fresh-{i}")) == Seen::Expired)
            .count();
        assert!(fp < 120, "false positives {fp} / 10000");
        // No false negatives, ever.
        for i in 0..128 {
            assert_eq!(w.seen(&format!("op-{i}")), Seen::Expired);
        }
    }
}
