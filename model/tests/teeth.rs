//! The checker has teeth: each deliberate breakage gives a counterexample,
//! and the trace is printed in words (run with `--nocapture` to read it).
use fencegate_model::core::GateVariant;
use fencegate_model::{Bounds, FenceModel, IssuerVariant, TxnVariant};

/// A small bound: enough for both breakages to show, seconds to explore.
fn small() -> Bounds {
    Bounds {
        clients: 2,
        resources: 1,
        acquisitions: 1,
        writes: 1,
        max_time: 1,
        ttl: 1,
        window: 1,
        snapshots: 0,
        restores: 0,
        reconciles: 0,
        crashes: 0,
        release: false,
        own_data: false,
        aborts: 0,
    }
}

/// The small bound with own-data transactions instead of writes (one rollback allowed).
fn small_own() -> Bounds {
    Bounds {
        own_data: true,
        aborts: 1,
        ..small()
    }
}

/// The shortest trace for `property` (the run stops at the first failure found).
fn counterexample(model: FenceModel, property: &str) -> String {
    let run = model.run(1, true, None);
    let found = run
        .counterexamples
        .iter()
        .find(|(name, _)| *name == property)
        .unwrap_or_else(|| {
            panic!(
                "no counterexample for {property:?}; found {:?}",
                run.counterexamples.iter().map(|c| c.0).collect::<Vec<_>>()
            )
        });
    println!("COUNTEREXAMPLE {property}\n{}", found.1);
    found.1.clone()
}

#[test]
fn a_gate_that_accepts_lower_epochs_is_caught() {
    let model = FenceModel {
        gate: GateVariant::AcceptsStale,
        ..FenceModel::new(small())
    };
    let trace = counterexample(
        model,
        "(b) no write below an epoch established at a resource lands there (unless that resource was restored)",
    );
    // A shortest trace: one client gets epoch 1, its lease lapses, the other
    // gets epoch 2 and establishes it, then the paused write at 1 lands.
    let establish = trace.find("deliver establish(r0, 2,").expect(&trace);
    let late = trace.find("deliver write(r0, 1,").expect(&trace);
    assert!(establish < late, "{trace}");
    assert!(!trace.contains("RESTORE"), "{trace}");
}

#[test]
fn an_issuer_that_answers_before_persisting_is_caught() {
    let model = FenceModel {
        issuer: IssuerVariant::RepliesBeforePersist,
        ..FenceModel::new(small())
    };
    let trace = counterexample(
        model,
        "(d) the issuer never grants one epoch twice (unless its store was restored)",
    );
    assert!(
        trace.contains("issuer answered but not yet written"),
        "{trace}"
    );
    assert!(!trace.contains("RESTORE"), "{trace}");
}

#[test]
fn the_shipped_protocol_passes_the_small_bound() {
    let run = FenceModel::new(small()).run(1, false, None);
    assert!(run.counterexamples.is_empty(), "{:#?}", run.counterexamples);
    assert!(run.unique_states > 1000, "{}", run.unique_states);
}

#[test]
fn a_check_outside_the_transaction_is_caught() {
    let model = FenceModel {
        txn: TxnVariant::CheckOutside,
        ..FenceModel::new(small_own())
    };
    let trace = counterexample(
        model,
        "(h) own data: each op id's effect is in the caller's data at most once, retries after a lost reply included",
    );
    // The transaction and its retry both pass the check (no lock, nothing
    // committed yet), then both commit their statements.
    let first = trace.find("deliver transaction(r0,").expect(&trace);
    let retry = trace.rfind("deliver transaction(r0,").expect(&trace);
    assert!(first < retry, "{trace}");
    assert!(trace.matches("COMMIT of c").count() == 2, "{trace}");
    assert!(trace.contains(" ×2"), "{trace}");
    assert!(!trace.contains("RESTORE"), "{trace}");
}

#[test]
fn statements_run_before_the_decision_are_caught() {
    let model = FenceModel {
        txn: TxnVariant::BodyBeforeDecision,
        ..FenceModel::new(small_own())
    };
    let trace = counterexample(
        model,
        "(g) own data: the caller's statements take effect only with a decision that applies, never with a refusal or a duplicate",
    );
    assert!(trace.contains("caller table: "), "{trace}");
    assert!(!trace.contains("RESTORE"), "{trace}");
    // and a retry runs them a second time
    let model = FenceModel {
        txn: TxnVariant::BodyBeforeDecision,
        ..FenceModel::new(small_own())
    };
    let trace = counterexample(
        model,
        "(h) own data: each op id's effect is in the caller's data at most once, retries after a lost reply included",
    );
    assert!(trace.contains(" ×2"), "{trace}");
}

#[test]
fn a_fence_record_committed_apart_from_the_statements_is_caught() {
    let model = FenceModel {
        txn: TxnVariant::FenceCommitsApart,
        ..FenceModel::new(small_own())
    };
    let trace = counterexample(
        model,
        "(j) own data: a transaction answered duplicate has its effect in the caller's data",
    );
    // the retry finds the op id in the fence record, already committed, and
    // answers duplicate while the statements have not committed (and may
    // roll back): the effect is not in the caller's table.
    let first = trace.find("deliver transaction(r0, 1,").expect(&trace);
    let retry = trace.rfind("deliver transaction(r0, 1,").expect(&trace);
    assert!(first < retry, "{trace}");
    assert!(!trace.contains("caller table: "), "{trace}");
}

#[test]
fn the_shipped_transaction_passes_the_small_bound() {
    let run = FenceModel::new(small_own()).run(1, false, None);
    assert!(run.counterexamples.is_empty(), "{:#?}", run.counterexamples);
    assert!(run.unique_states > 1000, "{}", run.unique_states);
    for p in [
        "own data: a paused client's late transaction is refused (its statements never run)",
        "own data: a retried transaction answers duplicate (its statements do not run again)",
        "own data: a transaction rolled back after its fence step commits on its retry",
    ] {
        assert!(
            run.reached.iter().any(|(n, _)| *n == p),
            "{p} not reached: {:?}",
            run.reached
        );
    }
}
