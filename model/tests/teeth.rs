//! The checker has teeth: each deliberate breakage gives a counterexample,
//! and the trace is printed in words (run with `--nocapture` to read it).
use fencegate_model::core::GateVariant;
use fencegate_model::{Bounds, FenceModel, IssuerVariant};

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
    }
}

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
