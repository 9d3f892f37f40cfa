//! The TypeScript declarations of what Rust defines (docs/decisions/generated-types.md):
//! the lists (codes, outcomes, the format versions the decoders read) rendered
//! from the Rust items themselves, and the records (persisted states, issuer
//! records and results, the reconcile findings) declared beside their Rust types
//! (`TYPESCRIPT` in src/format.rs, src/issuer.rs, src/reconcile.rs). Each must
//! appear verbatim in `pkg/index.d.ts`, and `bash scripts/gen-types.sh` writes
//! them there (`FENCEGATE_WRITE_TYPES=1`). The record members are compared with
//! what the built package answers by tests/js/api/types-sync.test.mjs.

use crate::decision::Outcome;
use crate::error::Code;
use crate::format::WireIssuerState;
use crate::state::ResourceState;

/// TSDoc carried by a member of the `ErrorCode` union: what a JS caller finds on
/// the error beyond the code (the Rust doc of each [`Code`] says what it means).
fn error_code_note(code: Code) -> Option<&'static str> {
    match code {
        Code::GuardRefused => Some("A database guard (fencegate/guard, docs/guard.md) refused a statement of a fenced transaction: `cause` is the database's error (SQLSTATE FG001/FG002), `verdict` the decision rolled back."),
        _ => None,
    }
}

/// `export type ErrorCode = …;`: every [`Code`], in discriminant order ([`Code::ALL`]).
fn error_code() -> String {
    let mut out = String::from("export type ErrorCode =");
    for code in Code::ALL {
        if let Some(note) = error_code_note(code) {
            out.push_str(&format!("\n  /** {note} */"));
        }
        out.push_str(&format!("\n  | '{}'", code.as_str()));
    }
    out.push(';');
    out
}

/// `export type Outcome = …;`: the name of every [`Outcome`] ([`Outcome::as_str`]).
fn outcome() -> String {
    let every = [
        Outcome::Advance,
        Outcome::Accept,
        Outcome::Reject,
        Outcome::Duplicate {
            original_advanced: false,
            original_before: 0,
        },
    ];
    // A variant added to Outcome fails to compile here until it is listed above.
    for o in every {
        match o {
            Outcome::Advance | Outcome::Accept | Outcome::Reject | Outcome::Duplicate { .. } => {}
        }
    }
    let names: Vec<String> = every.iter().map(|o| format!("'{}'", o.as_str())).collect();
    format!("export type Outcome = {};", names.join(" | "))
}

/// The format versions a decoder reads, found by asking it: `shape(N)` for N in
/// 0..=16 is refused as an unsupported version by exactly the versions it does not read.
fn read_versions(shape: impl Fn(u64) -> String, unsupported: impl Fn(&str) -> bool) -> Vec<u64> {
    (0..=16).filter(|&v| !unsupported(&shape(v))).collect()
}

/// `export type <name> = <prefix>V1 | …;`: one interface per version the decoder reads.
fn version_union(name: &str, versions: &[u64]) -> String {
    let members: Vec<String> = versions.iter().map(|v| format!("{name}V{v}")).collect();
    format!("export type {name} = {};", members.join(" | "))
}

/// `export type PersistedState = …;`: the versions [`ResourceState::from_json`] reads.
fn persisted_state() -> String {
    let versions = read_versions(
        |v| format!(r#"{{"v":{v},"mark":"1"}}"#),
        |text| {
            ResourceState::from_json(text)
                .is_err_and(|e| e.0.contains("unsupported state format version"))
        },
    );
    version_union("PersistedState", &versions)
}

/// `export type PersistedIssuerState = …;`: the versions [`WireIssuerState::from_json`] reads.
fn persisted_issuer_state() -> String {
    let versions = read_versions(
        |v| format!(r#"{{"v":{v},"epoch":"1","lease":null}}"#),
        |text| {
            WireIssuerState::from_json(text)
                .is_err_and(|e| e.0.contains("unsupported issuer state format version"))
        },
    );
    version_union("PersistedIssuerState", &versions)
}

/// Every generated alias: its name and its text.
fn aliases() -> Vec<(&'static str, String)> {
    vec![
        ("ErrorCode", error_code()),
        ("Outcome", outcome()),
        ("PersistedState", persisted_state()),
        ("PersistedIssuerState", persisted_issuer_state()),
    ]
}

/// The byte range of `export type <name> =…;` in `dts` (the alias ends at the
/// first `;` that ends a line).
fn alias_range(dts: &str, name: &str) -> Option<std::ops::Range<usize>> {
    let head = format!("export type {name} =");
    let start = dts.find(&head)?;
    let end = dts[start..].find(";\n").map(|i| start + i + 1)?;
    Some(start..end)
}

/// Every record declared beside its Rust type: its name and its text.
fn records() -> Vec<(&'static str, &'static str)> {
    [
        crate::format::TYPESCRIPT,
        crate::issuer::TYPESCRIPT,
        crate::reconcile::TYPESCRIPT,
    ]
    .concat()
}

/// The byte range of the declaration `export interface <name> {…}` (to its
/// closing `}` line) or `export type <name> =…;` in `dts`, with the doc
/// comment right above it.
fn declaration_range(dts: &str, name: &str) -> Option<std::ops::Range<usize>> {
    let interface = format!("\nexport interface {name} ");
    let alias = format!("\nexport type {name} =");
    let (at, end_mark) = match dts.find(&interface) {
        Some(at) => (at + 1, "\n}\n"),
        None => (dts.find(&alias)? + 1, ";\n"),
    };
    let end = dts[at..]
        .find(end_mark)
        .map(|i| at + i + end_mark.len() - 1)?;
    let start = if dts[..at].ends_with("*/\n") {
        dts[..at].rfind("\n/**").map_or(at, |i| i + 1)
    } else {
        at
    };
    Some(start..end)
}

#[test]
fn index_d_ts_declares_the_rust_records() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/pkg/index.d.ts");
    let mut dts = std::fs::read_to_string(path).expect("pkg/index.d.ts");
    let write = std::env::var("FENCEGATE_WRITE_TYPES").as_deref() == Ok("1");
    let mut stale = Vec::new();
    for (name, text) in records() {
        let range = declaration_range(&dts, name)
            .unwrap_or_else(|| panic!("pkg/index.d.ts does not declare {name}"));
        if dts[range.clone()] != *text {
            stale.push(name);
            dts.replace_range(range, text);
        }
    }
    if write {
        std::fs::write(path, &dts).expect("write pkg/index.d.ts");
    } else {
        assert!(
            stale.is_empty(),
            "pkg/index.d.ts: {stale:?} differ from their declarations beside the Rust types; run `bash scripts/gen-types.sh`"
        );
    }
}

#[test]
fn every_record_is_declared_once() {
    let names: Vec<&str> = records().iter().map(|(n, _)| *n).collect();
    let mut unique = names.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), names.len(), "{names:?}");
    for (name, text) in records() {
        assert!(
            text.contains(&format!("export interface {name} "))
                || text.contains(&format!("export type {name} =")),
            "{name}"
        );
    }
}

#[test]
fn index_d_ts_declares_the_rust_lists() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/pkg/index.d.ts");
    let mut dts = std::fs::read_to_string(path).expect("pkg/index.d.ts");
    let write = std::env::var("FENCEGATE_WRITE_TYPES").as_deref() == Ok("1");
    let mut stale = Vec::new();
    for (name, text) in aliases() {
        let range = alias_range(&dts, name)
            .unwrap_or_else(|| panic!("pkg/index.d.ts has no `export type {name} = …;`"));
        if dts[range.clone()] != text {
            stale.push(name);
            dts.replace_range(range, &text);
        }
    }
    if write {
        std::fs::write(path, &dts).expect("write pkg/index.d.ts");
    } else {
        assert!(
            stale.is_empty(),
            "pkg/index.d.ts: {stale:?} differ from what Rust defines; run `bash scripts/gen-types.sh`"
        );
    }
}

#[test]
fn the_generated_aliases_have_every_name_once() {
    let codes = error_code();
    for (i, code) in Code::ALL.into_iter().enumerate() {
        // the discriminants are the indexes (the binding's status numbers are 2 + index)
        assert_eq!(code as usize, i);
        assert_eq!(codes.matches(&format!("'{}'", code.as_str())).count(), 1);
    }
    assert_eq!(
        outcome(),
        "export type Outcome = 'advance' | 'accept' | 'reject' | 'duplicate';"
    );
    assert_eq!(
        persisted_state(),
        "export type PersistedState = PersistedStateV1 | PersistedStateV2 | PersistedStateV3 | PersistedStateV4;"
    );
    assert_eq!(
        persisted_issuer_state(),
        "export type PersistedIssuerState = PersistedIssuerStateV1 | PersistedIssuerStateV2;"
    );
}
