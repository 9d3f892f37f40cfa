//! The persisted-format fixture of texts written by the build before serde
//! (docs/decisions/persisted-formats-serde.md): `tests/fixtures/formats-today.json`.
//!
//! It holds, for every format that build wrote (resource state v1 and v4,
//! issuer record v1 and v2) and every format it still read (v2, v3, from
//! `tests/fixtures/state-v1-v3.json`), the text, what it decoded to (spelled
//! out field by field, independent of any codec) and what it encoded that
//! back to. The file was generated once, before the codec moved to serde,
//! with `FENCEGATE_WRITE_FIXTURE=1 cargo test --lib format_fixture` at commit b01eaab; since
//! then the test only compares: every text decodes exactly as it did, encodes
//! back to the same bytes, and decodes the same with its members in other
//! orders. The same states, encoded by the current build, give the same
//! texts. (The writing switch is gone: generated once, it stays frozen.)

// Test code only (`#[cfg(test)] mod format_fixture` in lib.rs): a fixture that
// does not read is a failing test, so it unwraps.
#![cfg(test)]

use serde_json::{json, Value};

use crate::issuer::{IssuerState, Lease, LeaseForm};
use crate::ops::{fingerprint, OpRecord, BLOOM_BYTES};
use crate::signed::b64_encode;
use crate::state::ResourceState;

const PATH: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/formats-today.json"
);

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A resource state spelled out (every field, u64 as decimal text).
fn describe_state(s: &ResourceState) -> Value {
    json!({
        "mark": s.mark.to_string(),
        "holder": s.holder,
        "ops": s.ops.ops.iter().map(|r| json!([
            r.id,
            r.mark_before.to_string(),
            r.fingerprint.map(|f| hex(&f)),
        ])).collect::<Vec<_>>(),
        "evicted": s.ops.evicted.as_ref().map(|f| hex(&f[..])),
        "legacyHash": s.ops.legacy_hash,
        "quarantine": s.quarantine.map(|q| q.to_string()),
    })
}

/// An issuer state spelled out.
fn describe_issuer(s: &IssuerState) -> Value {
    json!({
        "epoch": s.epoch.to_string(),
        "lease": s.lease.as_ref().map(|l| json!({
            "holder": l.holder,
            "expiresAt": l.expires_at.to_string(),
            "requestId": l.request_id,
            "form": match &l.form {
                LeaseForm::Derived => json!("derived"),
                LeaseForm::Keyed { id, ttl_ms } => json!({"id": id, "ttlMs": ttl_ms.to_string()}),
            },
        })),
    })
}

/// Holders and ids that exercise every escape the writer makes (holders may
/// hold control characters; operation ids may not).
const ODD_HOLDER: &str = "n\"o\\d/e\u{8}\u{c}\n\r\t\u{1}\u{1f}\u{7f}é🔒\u{2028}";
const ODD_ID: &str = "op \"1\"\\/é🔒\u{2028}";

fn rec(id: &str, mark_before: u64, fp: Option<&[u8]>) -> OpRecord {
    OpRecord {
        id: id.to_owned(),
        mark_before,
        fingerprint: fp.map(fingerprint),
    }
}

/// The states the build wrote: v1 (no holder, ids or quarantine), v4 otherwise.
fn written_states() -> Vec<(&'static str, ResourceState)> {
    let mut out = Vec::new();
    for (name, mark) in [
        ("v1 mark 0", 0),
        ("v1 mark 1", 1),
        ("v1 mark 41", 41),
        ("v1 above 2^53", (1 << 53) + 1),
        ("v1 u64 max", u64::MAX),
    ] {
        out.push((name, ResourceState::at(mark)));
    }
    let mut s = ResourceState::at(7);
    s.holder = Some("node-a".to_owned());
    out.push(("v4 holder only", s));
    let mut s = ResourceState::at(7);
    s.holder = Some(ODD_HOLDER.to_owned());
    out.push(("v4 holder with every escape", s));
    let mut s = ResourceState::at(u64::MAX);
    s.holder = Some("h".repeat(256));
    s.ops.push(rec("a", u64::MAX - 1, None), 64);
    s.ops.push(rec(ODD_ID, u64::MAX, Some(b"test")), 64);
    out.push(("v4 ops, fingerprint, odd id, u64 max", s));
    let mut s = ResourceState::at(5);
    for id in ["z", "1", "y"] {
        s.ops.push(rec(id, 5, None), 2);
    }
    out.push(("v4 window 2 with a filter", s));
    let mut s = ResourceState::at(5);
    s.ops.legacy_hash = true;
    s.ops.evicted = Some(Box::new([0; BLOOM_BYTES]));
    for id in ["a", "b", "c", "d"] {
        s.ops.push(rec(id, 5, Some(id.as_bytes())), 3);
    }
    out.push(("v4 legacy fnv1a filter", s));
    let mut s = ResourceState::at(9);
    s.quarantine_at(9);
    out.push(("v4 quarantined at the mark", s));
    let mut s = ResourceState::at(12);
    s.holder = Some("node-b".to_owned());
    s.ops.push(rec("r1", 11, None), 64);
    s.quarantine = Some(10);
    out.push(("v4 quarantine floor below the mark, holder and ops", s));
    let mut s = ResourceState::at(3);
    s.quarantine = Some(0);
    out.push(("v4 quarantine floor 0", s));
    out
}

fn lease_id(epoch: u64, tag: &[u8; 6], key: &[u8; 16]) -> String {
    let mut id = format!("{epoch}.");
    b64_encode(tag, &mut id);
    b64_encode(key, &mut id);
    id
}

/// The issuer records the build wrote: v1 while a derived-id lease lives, v2 otherwise.
fn written_issuers() -> Vec<(&'static str, IssuerState)> {
    let keyed = |epoch: u64, ttl_ms: u64| LeaseForm::Keyed {
        id: lease_id(epoch, &[1, 2, 3, 250, 251, 252], &[0xff; 16]),
        ttl_ms,
    };
    let lease = |holder: &str, expires_at: u64, request_id: Option<&str>, form| Lease {
        holder: holder.to_owned(),
        expires_at,
        request_id: request_id.map(str::to_owned),
        form,
    };
    vec![
        ("issuer v2 fresh", IssuerState::default()),
        (
            "issuer v2 released",
            IssuerState {
                epoch: 41,
                lease: None,
            },
        ),
        (
            "issuer v2 keyed lease with request id",
            IssuerState {
                epoch: 41,
                lease: Some(lease(
                    "node-a",
                    1_700_000_030_000,
                    Some("r-17"),
                    keyed(41, 30_000),
                )),
            },
        ),
        (
            "issuer v2 limits and escapes",
            IssuerState {
                epoch: u64::MAX,
                lease: Some(lease(
                    ODD_HOLDER,
                    (1 << 53) - 1,
                    Some(ODD_HOLDER),
                    keyed(u64::MAX, (1 << 53) - 1),
                )),
            },
        ),
        (
            "issuer v2 keyed lease, expiry 0, no request id",
            IssuerState {
                epoch: 1,
                lease: Some(lease("h", 0, None, keyed(1, 1))),
            },
        ),
        (
            "issuer v1 derived lease",
            IssuerState {
                epoch: 41,
                lease: Some(lease(
                    "node-a",
                    1_700_000_030_000,
                    Some("r-17"),
                    LeaseForm::Derived,
                )),
            },
        ),
        (
            "issuer v1 derived lease, no request id, escapes",
            IssuerState {
                epoch: (1 << 53) + 1,
                lease: Some(lease(ODD_HOLDER, 5, None, LeaseForm::Derived)),
            },
        ),
    ]
}

/// The v1–v3 texts of the older fixture (read, not written, by the build).
fn older_texts() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/state-v1-v3.json"
    ))
    .unwrap();
    let fixture: Value = serde_json::from_str(&text).unwrap();
    fixture["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                format!("read: {}", c["name"].as_str().unwrap()),
                c["text"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn state_case(name: &str, text: String, written: bool) -> Value {
    let s = ResourceState::from_json(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
    json!({"name": name, "kind": "state", "written": written, "text": text,
           "decoded": describe_state(&s), "encoded": s.to_json()})
}

fn issuer_case(name: &str, text: String) -> Value {
    let s = IssuerState::from_json(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
    json!({"name": name, "kind": "issuer", "written": true, "text": text,
           "decoded": describe_issuer(&s), "encoded": s.to_json()})
}

fn generate() -> Value {
    let mut cases = Vec::new();
    for (name, s) in written_states() {
        cases.push(state_case(name, s.to_json(), true));
    }
    for (name, text) in older_texts() {
        cases.push(state_case(&name, text, false));
    }
    for (name, s) in written_issuers() {
        cases.push(issuer_case(name, s.to_json()));
    }
    json!({
        "generatedBy": "src/format_fixture.rs (FENCEGATE_WRITE_FIXTURE=1 cargo test --lib format_fixture) with the hand-written JSON codec, before serde (issue 12)",
        "cases": cases,
    })
}

/// The text with its top-level members (and those of the issuer lease) in
/// another order: `rev` false sorts names alphabetically, true reverses that.
fn reordered(text: &str, rev: bool) -> String {
    use serde_json::value::RawValue;
    use std::collections::BTreeMap;
    // Members as raw text (a v2/v3 `ops` object keeps its order: it is the window order).
    fn obj(text: &str, rev: bool, nested: bool) -> String {
        let members: BTreeMap<String, Box<RawValue>> = serde_json::from_str(text).unwrap();
        let mut members: Vec<String> = members
            .iter()
            .map(|(k, v)| {
                let v = match v.get() {
                    t if nested && k == "lease" && t.starts_with('{') => obj(t, rev, false),
                    t => t.to_owned(),
                };
                format!("{}:{v}", Value::String(k.clone()))
            })
            .collect();
        if rev {
            members.reverse();
        }
        format!("{{{}}}", members.join(","))
    }
    obj(text, rev, true)
}

#[test]
fn texts_written_before_serde_decode_and_encode_the_same() {
    let fixture: Value = serde_json::from_str(&std::fs::read_to_string(PATH).unwrap()).unwrap();
    let cases = fixture["cases"].as_array().unwrap();
    // The same states, encoded now, give the same texts (and decodes) as then.
    let mut frozen = cases.clone();
    for c in &mut frozen {
        c.as_object_mut().unwrap().remove("decodeState");
    }
    assert_eq!(generate()["cases"], Value::Array(frozen));
    assert_eq!(cases.len(), 13 + 16 + 7);
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let text = case["text"].as_str().unwrap();
        let encoded = case["encoded"].as_str().unwrap();
        if case["written"] == json!(true) {
            assert_eq!(encoded, text, "{name}: written text is not a fixed point");
        }
        let mut texts = vec![
            text.to_owned(),
            reordered(text, false),
            reordered(text, true),
        ];
        texts.push(format!(" \n{}\t\r ", texts[2].replace(',', " ,\n ")));
        for t in &texts {
            let (decoded, again) = if case["kind"] == "state" {
                let s = ResourceState::from_json(t).unwrap_or_else(|e| panic!("{name} {t}: {e}"));
                (describe_state(&s), s.to_json())
            } else {
                let s = IssuerState::from_json(t).unwrap_or_else(|e| panic!("{name} {t}: {e}"));
                (describe_issuer(&s), s.to_json())
            };
            assert_eq!(decoded, case["decoded"], "{name}: {t}");
            assert_eq!(again, encoded, "{name}: {t}");
        }
    }
}
