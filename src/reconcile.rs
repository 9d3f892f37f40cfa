//! The reconcile planner (DESIGN R11; docs/decisions/reconcile-planner.md): what to
//! repair after a restore.
//!
//! An issuer restored from an old backup hands out epochs again that resources
//! have already seen; a resource restored from an old backup (or one that lost
//! its record) accepts epochs it had already fenced out. [`plan`] takes what
//! the JS `reconcile()` read for one scope — the issuer's record
//! (`Issuer.current`) and the fence record of each resource key
//! (`Gate.inspect`) — and answers the repair, only ever raising:
//!
//! 1. issuer: the scope's epoch is raised to the largest mark any of its
//!    resources has (the next acquisition issues a larger epoch). A live lease
//!    that cannot be a valid ownership is revoked: its epoch is below that
//!    mark, or equal to it while a resource bound the epoch to another holder
//!    (one epoch handed to two owners: a [`Conflict`]).
//! 2. resources: a key whose mark is below the issuer's epoch E is raised:
//!    while E's lease is live, `establish(key, E, { holder })` binds the live
//!    holder; otherwise the key is quarantined at E.
//!
//! A mark above the issuer's epoch limit (a resource that took a bigint token,
//! a `'number'` issuer) cannot be repaired by raising: the issuer could never
//! issue past it. Such a key is an `EPOCH_OVERFLOW` error of its own and is
//! left out of the raise; the rest of the scope is repaired as usual.
//!
//! The planner is pure: it reads nothing and writes nothing. The JS side
//! (`pkg/lib/reconcile.mjs`) carries the plan out through the stores. The
//! issuer step is planned from the record; once the raise was carried out,
//! [`ScopeInput::raised`] hands its actual result back and the same function
//! plans the resources from it (in a dry run, from the planned raise).

use serde::{Deserialize, Serialize, Serializer};

use crate::error::Code;
use crate::format::quoted;
use crate::issuer::{serialize_epoch, EpochLimit, IssuerRecord};

/// A resource's fence record as `Gate.inspect` reports it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FenceRecord {
    /// The resource key.
    pub key: String,
    /// Whether the key has a record.
    pub exists: bool,
    /// Its high-water mark (0 without a record).
    #[serde(serialize_with = "serialize_epoch")]
    pub mark: u64,
    /// The holder bound to the mark, if any.
    pub holder: Option<String>,
    /// The quarantine floor, if any.
    #[serde(serialize_with = "serialize_opt_epoch")]
    pub quarantine: Option<u64>,
}

/// The actual result of the planned issuer raise (`Issuer.raise`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Raised {
    /// The epoch before.
    pub epoch_before: u64,
    /// The epoch after.
    pub epoch: u64,
    /// Whether a live lease was revoked.
    pub revoked: bool,
}

/// What the planner reads for one scope.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScopeInput {
    /// The issuer's record of the scope.
    pub issuer: IssuerRecord,
    /// The fence records of the scope's keys that could be read.
    pub keys: Vec<FenceRecord>,
    /// Host time in ms (decides whether the lease is live).
    pub now: u64,
    /// The issuer's epochs are bigints (limit 2^64−1; else 2^53−1).
    pub bigint: bool,
    /// The result of the raise carried out, once it was (absent: plan it).
    #[serde(default)]
    pub raised: Option<Raised>,
}

/// The issuer's lease in a scope's report (no lease id: with the holder it
/// renews or releases the lease, and reports get printed and logged).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LeaseSummary {
    /// Who holds it.
    pub holder: String,
    /// Its expiry in host ms.
    #[serde(serialize_with = "serialize_epoch")]
    pub expires_at: u64,
    /// Whether it is live at `now`.
    pub live: bool,
}

/// The issuer as read, in a scope's report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IssuerSummary {
    /// The epoch as read.
    #[serde(serialize_with = "serialize_epoch")]
    pub epoch: u64,
    /// Its lease, live or not.
    pub lease: Option<LeaseSummary>,
}

/// One epoch, two owners: a resource bound the issuer's current epoch to
/// another holder than the issuer's lease names (reported even when that
/// lease has ended; only a live one needs revoking).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Conflict {
    /// The resource key.
    pub key: String,
    /// The issuer's epoch (= the key's mark).
    #[serde(serialize_with = "serialize_epoch")]
    pub epoch: u64,
    /// The holder the resource bound.
    pub resource_holder: String,
    /// The holder of the issuer's lease.
    pub lease_holder: String,
    /// Whether that lease is live.
    pub live: bool,
}

/// A key the planner leaves untouched, with why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KeyError {
    /// The resource key.
    pub key: String,
    /// Its code (`EPOCH_OVERFLOW`).
    pub code: &'static str,
    /// What happened and what to do.
    pub message: String,
}

/// A revoked lease.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Revoked {
    /// Its holder.
    pub holder: String,
    /// Its epoch.
    #[serde(serialize_with = "serialize_epoch")]
    pub epoch: u64,
}

/// The issuer's change, as reported.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IssuerChange {
    /// `"raise"` or `"raise+revoke"`.
    pub action: &'static str,
    /// The epoch before.
    #[serde(serialize_with = "serialize_epoch")]
    pub epoch_before: u64,
    /// The epoch after.
    #[serde(serialize_with = "serialize_epoch")]
    pub epoch_after: u64,
    /// The revoked lease, if one was.
    pub revoked: Option<Revoked>,
}

/// The issuer step: `Issuer.raise({ atLeast, revoke: true })`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RaiseStep {
    /// The floor to raise to (the largest repairable mark, at least 1).
    #[serde(serialize_with = "serialize_epoch")]
    pub at_least: u64,
    /// The change it makes (planned, or from [`ScopeInput::raised`]); `None`: none.
    pub change: Option<IssuerChange>,
}

/// One resource step: `establish(key, markAfter, { holder })` or
/// `quarantine(key, floor)`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceStep {
    /// The resource key.
    pub key: String,
    /// `"establish"` or `"quarantine"`.
    pub action: &'static str,
    /// The mark as read.
    #[serde(serialize_with = "serialize_epoch")]
    pub mark_before: u64,
    /// The mark after (the issuer's epoch).
    #[serde(serialize_with = "serialize_epoch")]
    pub mark_after: u64,
    /// establish: the live lease's holder.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub holder: Option<String>,
    /// quarantine: the floor (the issuer's epoch).
    #[serde(
        skip_serializing_if = "Option::is_none",
        serialize_with = "serialize_opt_epoch"
    )]
    pub floor: Option<u64>,
}

/// The plan for one scope.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScopePlan {
    /// The issuer as read.
    pub issuer: IssuerSummary,
    /// Epochs bound to two owners.
    pub conflicts: Vec<Conflict>,
    /// Keys left untouched (marks above the issuer's limit).
    pub errors: Vec<KeyError>,
    /// The issuer step, `None` when the issuer needs no change.
    pub raise: Option<RaiseStep>,
    /// The resource steps, in key order.
    pub resources: Vec<ResourceStep>,
}

fn serialize_opt_epoch<S: Serializer>(v: &Option<u64>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(e) => serialize_epoch(e, s),
        None => s.serialize_none(),
    }
}

/// Plans the repair of one scope (see the module docs).
pub fn plan(input: &ScopeInput) -> ScopePlan {
    let cur = &input.issuer;
    let limit = if input.bigint {
        EpochLimit::BigInt
    } else {
        EpochLimit::Number
    }
    .max();
    let live = cur.lease.as_ref().filter(|l| input.now < l.expires_at);

    let mut errors = Vec::new();
    let mut max_mark = 0;
    for r in &input.keys {
        if r.mark > limit {
            errors.push(KeyError {
                key: r.key.clone(),
                code: Code::EpochOverflow.as_str(),
                message: format!(
                    "the mark of {} ({}) is above the largest epoch this issuer can issue ({limit}); not raised, left untouched: reconcile it with an issuer of epochs 'bigint'",
                    quoted(&r.key),
                    r.mark
                ),
            });
        } else {
            max_mark = max_mark.max(r.mark);
        }
    }

    let conflicts: Vec<Conflict> = match &cur.lease {
        None => Vec::new(),
        Some(lease) => input
            .keys
            .iter()
            .filter_map(|r| match &r.holder {
                Some(h) if r.mark == cur.epoch && *h != lease.holder => Some(Conflict {
                    key: r.key.clone(),
                    epoch: cur.epoch,
                    resource_holder: h.clone(),
                    lease_holder: lease.holder.clone(),
                    live: live.is_some(),
                }),
                _ => None,
            })
            .collect(),
    };
    let live_conflict = conflicts.iter().any(|c| c.live);

    // 1. The issuer: above every mark; revoke a live lease that cannot be valid.
    let mut epoch = cur.epoch;
    let mut holder = live.map(|l| l.holder.as_str());
    let raise = (max_mark > cur.epoch || live_conflict).then(|| {
        let r = input.raised.unwrap_or(Raised {
            epoch_before: cur.epoch,
            epoch: cur.epoch.max(max_mark),
            revoked: live.is_some(),
        });
        epoch = r.epoch;
        if r.revoked {
            holder = None;
        }
        RaiseStep {
            at_least: max_mark.max(1),
            change: (r.epoch_before != r.epoch || r.revoked).then(|| IssuerChange {
                action: if r.revoked { "raise+revoke" } else { "raise" },
                epoch_before: r.epoch_before,
                epoch_after: r.epoch,
                revoked: live.filter(|_| r.revoked).map(|l| Revoked {
                    holder: l.holder.clone(),
                    epoch: cur.epoch,
                }),
            }),
        }
    });

    // 2. The resources: nothing below the issuer's epoch. A live lease that
    // survived step 1 is the lease of `epoch` itself.
    let resources = input
        .keys
        .iter()
        .filter(|r| r.mark < epoch)
        .map(|r| ResourceStep {
            key: r.key.clone(),
            action: if holder.is_some() {
                "establish"
            } else {
                "quarantine"
            },
            mark_before: r.mark,
            mark_after: epoch,
            holder: holder.map(str::to_owned),
            floor: holder.is_none().then_some(epoch),
        })
        .collect();

    ScopePlan {
        issuer: IssuerSummary {
            epoch: cur.epoch,
            lease: cur.lease.as_ref().map(|l| LeaseSummary {
                holder: l.holder.clone(),
                expires_at: l.expires_at,
                live: live.is_some(),
            }),
        },
        conflicts,
        errors,
        raise,
        resources,
    }
}

/// The TypeScript declarations of the records this module defines, as
/// `pkg/index.d.ts` publishes them (docs/decisions/generated-types.md):
/// `src/typescript.rs` renders each one there; tests/js/api/types-sync.test.mjs
/// compares their members with what the built package answers.
pub(crate) const TYPESCRIPT: &[(&str, &str)] = &[
    (
        "FenceRecord",
        r##"/** A key's fence record as stored (see {@link Gate.inspect}). */
export interface FenceRecord {
  key: string;
  /** `false` when the key has no record (mark 0). */
  exists: boolean;
  mark: Epoch;
  /** The holder bound to the current epoch, or null. */
  holder: string | null;
  /** The quarantine floor, or null when not quarantined. */
  quarantine: Epoch | null;
}"##,
    ),
    (
        "ReconcileRevoked",
        r##"/** A lease reconcile revoked. */
export interface ReconcileRevoked {
  holder: string;
  epoch: Epoch;
}"##,
    ),
    (
        "ReconcileIssuerChange",
        r##"/** The issuer's change. */
export interface ReconcileIssuerChange {
  scope: string;
  target: 'issuer';
  /** `raise+revoke`: a live lease that cannot be valid was dropped too. */
  action: 'raise' | 'raise+revoke';
  epochBefore: Epoch;
  epochAfter: Epoch;
  revoked: ReconcileRevoked | null;
}"##,
    ),
    (
        "ReconcileEstablish",
        r##"/** A key raised to the issuer's epoch for the live lease's holder. */
export interface ReconcileEstablish {
  scope: string;
  target: 'resource';
  key: string;
  action: 'establish';
  markBefore: Epoch;
  markAfter: Epoch;
  holder: string;
}"##,
    ),
    (
        "ReconcileQuarantine",
        r##"/** A key quarantined at the issuer's epoch (no live lease). */
export interface ReconcileQuarantine {
  scope: string;
  target: 'resource';
  key: string;
  action: 'quarantine';
  markBefore: Epoch;
  markAfter: Epoch;
  floor: Epoch;
}"##,
    ),
    (
        "ReconcileChange",
        r##"/** One write reconcile made (or would make, in a dry run). */
export type ReconcileChange = ReconcileIssuerChange | ReconcileEstablish | ReconcileQuarantine;"##,
    ),
    (
        "ReconcileLease",
        r##"/** The issuer's lease as reconcile read it (no lease id: it is the lease's credential, and reports get logged). */
export interface ReconcileLease {
  holder: string;
  expiresAt: number;
  /** Live at reconcile's `now`. */
  live: boolean;
}"##,
    ),
    (
        "ReconcileIssuer",
        r##"/** The issuer's record as reconcile read it. */
export interface ReconcileIssuer {
  epoch: Epoch;
  lease: ReconcileLease | null;
}"##,
    ),
    (
        "ReconcileConflict",
        r##"/**
 * The issuer's current epoch bound to another holder at a resource than its
 * lease names: one epoch handed to two owners. `live`: the lease was live (and was revoked).
 */
export interface ReconcileConflict {
  key: string;
  epoch: Epoch;
  resourceHolder: string;
  leaseHolder: string;
  live: boolean;
}"##,
    ),
    (
        "ReconcileError",
        r##"/** A key reconcile left untouched: its record could not be decoded (CORRUPT_STATE), its mark is above the issuer's limit (EPOCH_OVERFLOW) or its establish was refused. Repair by hand. */
export interface ReconcileError {
  key: string;
  code: ErrorCode;
  message: string;
}"##,
    ),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::issuer::LeaseRecord;
    use proptest::prelude::*;

    fn rec(key: &str, mark: u64, holder: Option<&str>) -> FenceRecord {
        FenceRecord {
            key: key.to_owned(),
            exists: mark > 0,
            mark,
            holder: holder.map(str::to_owned),
            quarantine: None,
        }
    }

    fn input(
        epoch: u64,
        lease: Option<(&str, u64)>,
        keys: Vec<FenceRecord>,
        now: u64,
    ) -> ScopeInput {
        ScopeInput {
            issuer: IssuerRecord {
                scope: "s".to_owned(),
                epoch,
                lease: lease.map(|(holder, expires_at)| LeaseRecord {
                    lease_id: format!("{epoch}.x"),
                    holder: holder.to_owned(),
                    expires_at,
                    request_id: None,
                }),
            },
            keys,
            now,
            bigint: false,
            raised: None,
        }
    }

    #[test]
    fn a_healthy_scope_plans_nothing() {
        let p = plan(&input(
            3,
            Some(("A", 100)),
            vec![rec("k", 3, Some("A"))],
            50,
        ));
        assert_eq!(p.raise, None);
        assert_eq!(p.resources, vec![]);
        assert_eq!(p.conflicts, vec![]);
        assert_eq!(
            serde_json::to_value(&p.issuer).unwrap(),
            serde_json::json!({ "epoch": 3, "lease": { "holder": "A", "expiresAt": 100, "live": true } })
        );
    }

    #[test]
    fn a_restored_issuer_is_raised_revoking_its_live_lease_and_lagging_keys_are_quarantined() {
        // Issuer restored to epoch 5 (lease of A live); k1 saw 7, k2 is at 4.
        let keys = vec![rec("k1", 7, Some("B")), rec("k2", 4, None)];
        let p = plan(&input(5, Some(("A", 100)), keys.clone(), 50));
        assert_eq!(
            serde_json::to_value(&p).unwrap(),
            serde_json::json!({
                "issuer": { "epoch": 5, "lease": { "holder": "A", "expiresAt": 100, "live": true } },
                "conflicts": [],
                "errors": [],
                "raise": { "atLeast": 7, "change": {
                    "action": "raise+revoke", "epochBefore": 5, "epochAfter": 7,
                    "revoked": { "holder": "A", "epoch": 5 } } },
                "resources": [
                    { "key": "k2", "action": "quarantine", "markBefore": 4, "markAfter": 7, "floor": 7 }
                ]
            })
        );
        // Planned again from the raise's actual result (say another raise got to 8 first, no revoke).
        let mut again = input(5, Some(("A", 100)), keys, 50);
        again.raised = Some(Raised {
            epoch_before: 8,
            epoch: 8,
            revoked: false,
        });
        let p = plan(&again);
        assert_eq!(p.raise.unwrap().change, None);
        let steps: Vec<_> = p
            .resources
            .iter()
            .map(|r| (r.key.as_str(), r.action, r.mark_after))
            .collect();
        assert_eq!(steps, vec![("k1", "establish", 8), ("k2", "establish", 8)]);
        assert_eq!(p.resources[0].holder.as_deref(), Some("A"));
    }

    #[test]
    fn lagging_keys_are_bound_to_the_live_holder() {
        let p = plan(&input(
            6,
            Some(("A", 100)),
            vec![rec("k", 2, None), rec("m", 6, Some("A"))],
            99,
        ));
        assert_eq!(p.raise, None);
        assert_eq!(
            serde_json::to_value(&p.resources).unwrap(),
            serde_json::json!([{ "key": "k", "action": "establish", "markBefore": 2, "markAfter": 6, "holder": "A" }])
        );
    }

    #[test]
    fn one_epoch_two_owners_is_a_conflict_and_a_live_one_is_revoked() {
        let keys = vec![rec("k", 6, Some("B"))];
        let live = plan(&input(6, Some(("A", 100)), keys.clone(), 50));
        assert_eq!(
            serde_json::to_value(&live.conflicts).unwrap(),
            serde_json::json!([{ "key": "k", "epoch": 6, "resourceHolder": "B", "leaseHolder": "A", "live": true }])
        );
        let r = live.raise.unwrap();
        assert_eq!((r.at_least, r.change.unwrap().action), (6, "raise+revoke"));
        // Lapsed: reported, nothing to revoke, nothing raised.
        let lapsed = plan(&input(6, Some(("A", 100)), keys, 100));
        assert!(!lapsed.conflicts[0].live);
        assert_eq!(lapsed.raise, None);
    }

    #[test]
    fn a_mark_above_the_number_limit_is_an_error_of_its_key_and_not_raised_for() {
        let big = MAX_SAFE + 5;
        let p = plan(&input(
            2,
            None,
            vec![rec("b\"ig\n", big, None), rec("k", 4, None)],
            0,
        ));
        assert_eq!(p.errors.len(), 1);
        assert_eq!(p.errors[0].code, "EPOCH_OVERFLOW");
        assert_eq!(
            p.errors[0].message,
            "the mark of \"b\\\"ig\\n\" (9007199254740996) is above the largest epoch this issuer can issue (9007199254740991); not raised, left untouched: reconcile it with an issuer of epochs 'bigint'"
        );
        assert_eq!(p.raise.unwrap().at_least, 4);
        // A bigint issuer raises to it; the plan serializes it above 2^53−1 (a BigInt in JS).
        let mut wide = input(2, None, vec![rec("big", big, None)], 0);
        wide.bigint = true;
        let p = plan(&wide);
        assert_eq!(p.errors, vec![]);
        assert_eq!(p.raise.unwrap().at_least, big);
    }

    #[test]
    fn the_input_reads_the_records_the_js_api_resolves_to() {
        let i: ScopeInput = serde_json::from_value(serde_json::json!({
            "issuer": { "scope": "s", "epoch": 3, "lease": { "leaseId": "3.x", "holder": "A", "expiresAt": 9, "requestId": null } },
            "keys": [{ "key": "k", "exists": true, "mark": 1, "holder": null, "quarantine": null }],
            "now": 5, "bigint": false
        }))
        .unwrap();
        assert_eq!(i, input(3, Some(("A", 9)), vec![rec("k", 1, None)], 5));
    }

    const MAX_SAFE: u64 = crate::token::MAX_SAFE_INTEGER;

    /// The stores after a plan is carried out as planned.
    fn carry_out(i: &ScopeInput, p: &ScopePlan) -> ScopeInput {
        let mut next = i.clone();
        if let Some(r) = &p.raise {
            next.issuer.epoch = next.issuer.epoch.max(r.at_least);
            if r.change.as_ref().is_some_and(|c| c.revoked.is_some()) {
                next.issuer.lease = None;
            }
        }
        for s in &p.resources {
            let k = next.keys.iter_mut().find(|k| k.key == s.key).unwrap();
            k.mark = s.mark_after;
            k.holder = s.holder.clone();
        }
        next
    }

    fn scope_input() -> impl Strategy<Value = ScopeInput> {
        let key = (
            0u64..10,
            prop::option::of(prop_oneof!["A", "B"]),
            any::<bool>(),
        );
        (
            0u64..10,
            prop::option::of((prop_oneof!["A", "B"], 0u64..60)),
            prop::collection::vec(key, 0..5),
            0u64..60,
            any::<bool>(),
        )
            // Only records the decoders accept: an issuer lease needs an epoch
            // (≥ 1), a resource holder needs a mark (≥ 1).
            .prop_map(|(epoch, lease, keys, now, bigint)| ScopeInput {
                issuer: IssuerRecord {
                    scope: "s".to_owned(),
                    epoch,
                    lease: lease
                        .filter(|_| epoch >= 1)
                        .map(|(holder, expires_at)| LeaseRecord {
                            lease_id: "x".to_owned(),
                            holder,
                            expires_at,
                            request_id: None,
                        }),
                },
                keys: keys
                    .into_iter()
                    .enumerate()
                    .map(|(n, (mark, holder, huge))| FenceRecord {
                        key: format!("k{n}"),
                        exists: true,
                        mark: if huge && n == 0 {
                            MAX_SAFE + mark
                        } else {
                            mark
                        },
                        holder: holder.filter(|_| mark >= 1 || (huge && n == 0)),
                        quarantine: None,
                    })
                    .collect(),
                now,
                bigint,
                raised: None,
            })
    }

    proptest! {
        /// Only raises; afterwards no repairable mark is above the issuer and
        /// none below it; a second plan right after changes nothing.
        #[test]
        fn plans_only_raise_and_a_second_plan_changes_nothing(i in scope_input()) {
            let p = plan(&i);
            let limit = if i.bigint { u64::MAX } else { MAX_SAFE };
            for s in &p.resources {
                prop_assert!(s.mark_after > s.mark_before);
            }
            if let Some(r) = &p.raise {
                prop_assert!(r.at_least >= 1);
                if let Some(c) = &r.change {
                    prop_assert!(c.epoch_after >= c.epoch_before);
                }
            }
            let after = carry_out(&i, &p);
            for k in after.keys.iter().filter(|k| k.mark <= limit) {
                prop_assert_eq!(k.mark, after.issuer.epoch, "key {}", &k.key);
            }
            let second = plan(&after);
            prop_assert_eq!(second.raise, None);
            prop_assert_eq!(second.resources, vec![]);
        }
    }
}
