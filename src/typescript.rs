//! The TypeScript declarations of what Rust defines (docs/decisions/generated-types.md):
//! the lists (codes, outcomes, the format versions the decoders read) rendered
//! from the Rust items themselves, and the records (persisted states, issuer
//! records and results, the reconcile findings) declared beside their Rust types
//! (`TYPESCRIPT` in src/format.rs, src/issuer.rs, src/reconcile.rs).
//!
//! `pkg/index.d.ts` is built from the hand-written `pkg/index.d.ts.in`
//! (the JS-only declarations, with a line `// rendered from Rust: NAME` where
//! each of these goes) by [`render`], which `scripts/gen-types.sh` runs (the
//! `fencegate-types` binary) from `scripts/build.sh`; the built file is not
//! tracked. tests/js/api/types-sync.test.mjs compares the declarations with
//! what the built package answers.

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

/// Every declaration Rust defines, by name: the lists rendered from Rust and
/// the records declared beside their types.
pub fn declarations() -> Vec<(&'static str, String)> {
    let mut out = vec![
        ("ErrorCode", error_code()),
        ("Outcome", outcome()),
        ("PersistedState", persisted_state()),
        ("PersistedIssuerState", persisted_issuer_state()),
    ];
    let records = [
        crate::format::TYPESCRIPT,
        crate::issuer::TYPESCRIPT,
        crate::reconcile::TYPESCRIPT,
    ];
    out.extend(records.concat().iter().map(|(n, t)| (*n, (*t).to_owned())));
    out
}

/// What marks the place of a declaration in the template: a line of its own.
const PLACE: &str = "// rendered from Rust: ";

/// `pkg/index.d.ts` from its template: every line `// rendered from Rust: NAME`
/// replaced by the declaration of NAME. An error names a place with no
/// declaration, a declaration with no place or with two.
pub fn render(template: &str) -> Result<String, String> {
    let decls = declarations();
    let mut used = vec![0usize; decls.len()];
    let mut out = String::with_capacity(template.len() * 2);
    for line in template.split_inclusive('\n') {
        let Some(name) = line.strip_prefix(PLACE) else {
            out.push_str(line);
            continue;
        };
        let name = name.trim_end();
        let i = decls
            .iter()
            .position(|(n, _)| *n == name)
            .ok_or_else(|| format!("the template names {name}, which Rust does not declare"))?;
        used[i] += 1;
        out.push_str(&decls[i].1);
        out.push('\n');
    }
    for ((name, _), n) in decls.iter().zip(used) {
        if n != 1 {
            return Err(format!(
                "the template places {name} {n} times (once expected)"
            ));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_template_places_every_declaration_once() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/pkg/index.d.ts.in");
        let template = std::fs::read_to_string(path).expect("pkg/index.d.ts.in");
        let dts = render(&template).unwrap_or_else(|e| panic!("{e}"));
        for (name, text) in declarations() {
            assert_eq!(dts.matches(text.as_str()).count(), 1, "{name}");
        }
        assert!(render("// rendered from Rust: Nothing\n").is_err());
        assert!(render("").is_err());
    }

    #[test]
    fn every_declaration_names_itself() {
        let decls = declarations();
        for (name, text) in &decls {
            assert!(
                text.contains(&format!("export interface {name} "))
                    || text.contains(&format!("export type {name} =")),
                "{name}"
            );
            assert_eq!(decls.iter().filter(|(n, _)| n == name).count(), 1, "{name}");
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
}
