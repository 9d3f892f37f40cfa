//! The decoders of both persisted records, [`ResourceState::from_json`] and
//! [`IssuerState::from_json`], over the same texts: neither panics on any
//! text, and each refuses (`CORRUPT_STATE`) exactly what the hand-written
//! reader before serde refused ([`crate::format`] documents the reader).
//!
//! Test code only (`#[cfg(test)] mod format_strictness` in lib.rs); it sits
//! above both records, so [`crate::format`] needs neither.

#![cfg(test)]

use proptest::prelude::*;

use crate::issuer::IssuerState;
use crate::state::ResourceState;

proptest! {
    /// No text makes a decoder panic (arbitrary strings, and JSON-like ones).
    #[test]
    fn never_panics(s in any::<String>(), j in r#"[\{\}\[\]":,0-9a-z\\ .eE+-]{0,40}"#) {
        for t in [&s, &j] {
            let _ = IssuerState::from_json(t);
            let _ = ResourceState::from_json(t);
        }
    }
}

const V4: &str =
    r#"{"v":4,"mark":"41","holder":"h","ops":[["a","40"]],"evicted":null,"quarantine":null}"#;
const V2: &str = r#"{"v":2,"mark":"41","holder":"h","ops":{"a":"40"},"evicted":null}"#;
const ISSUER: &str = r#"{"v":2,"epoch":"1","lease":{"id":"1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA","holder":"a","expiresAt":"5","ttlMs":"5","requestId":null}}"#;

/// `text` with the first `from` replaced by `to` (which must occur).
fn with(text: &str, from: &str, to: &str) -> String {
    assert!(text.contains(from), "{text} has no {from}");
    text.replacen(from, to, 1)
}

/// serde reads exactly what the hand-written reader read.
/// Each listed input is `CORRUPT_STATE` (a [`StateError`](crate::error::StateError)) for the
/// resource state and the issuer record alike; so is each with its
/// members in another order.
#[test]
fn strictness_is_kept() {
    let mut bad: Vec<String> = Vec::new();
    // Non-canonical or out-of-range numbers where a number belongs (v).
    for v in [
        "1.0",
        "01",
        "1e0",
        "1E0",
        "-0",
        "-1",
        "+1",
        "0x1",
        "1.",
        ".1",
        "1e3",
        "4.0",
        "NaN",
        "Infinity",
        "9007199254740993",
        "18446744073709551616",
        "\"1\"",
        "true",
        "null",
        "[1]",
        "{}",
    ] {
        bad.push(with(V4, "\"v\":4", &format!("\"v\":{v}")));
        bad.push(with(
            r#"{"v":1,"mark":"41"}"#,
            "\"v\":1",
            &format!("\"v\":{v}"),
        ));
        bad.push(with(ISSUER, "\"v\":2", &format!("\"v\":{v}")));
    }
    // Wrong versions.
    for v in ["0", "5", "3", "18446744073709551615"] {
        bad.push(with(V4, "\"v\":4", &format!("\"v\":{v}")));
        bad.push(with(ISSUER, "\"v\":2", &format!("\"v\":{v}")));
    }
    // Non-canonical decimal text (or a number) where text belongs.
    for m in [
        "\"041\"",
        "\"00\"",
        "\"1.0\"",
        "\"1e3\"",
        "\"-0\"",
        "\"-1\"",
        "\"+1\"",
        "\" 41\"",
        "\"41 \"",
        "\"\"",
        "\"18446744073709551616\"",
        "41",
        "4.1e1",
        "null",
    ] {
        bad.push(with(V4, "\"mark\":\"41\"", &format!("\"mark\":{m}")));
        bad.push(with(V2, "\"mark\":\"41\"", &format!("\"mark\":{m}")));
        bad.push(with(ISSUER, "\"epoch\":\"1\"", &format!("\"epoch\":{m}")));
        bad.push(with(
            ISSUER,
            "\"expiresAt\":\"5\"",
            &format!("\"expiresAt\":{m}"),
        ));
        bad.push(with(V4, "[\"a\",\"40\"]", &format!("[\"a\",{m}]")));
        bad.push(with(V2, "{\"a\":\"40\"}", &format!("{{\"a\":{m}}}")));
    }
    // Out of range.
    bad.push(with(V4, "\"quarantine\":null", "\"quarantine\":\"42\""));
    bad.push(with(V4, "[\"a\",\"40\"]", "[\"a\",\"42\"]"));
    bad.push(with(
        ISSUER,
        "\"expiresAt\":\"5\"",
        "\"expiresAt\":\"9007199254740992\"",
    ));
    bad.push(with(ISSUER, "\"ttlMs\":\"5\"", "\"ttlMs\":\"0\""));
    // Unknown, duplicate and missing fields, at every level.
    for (text, field, value) in [
        (V4, "v", "4"),
        (V4, "mark", "\"41\""),
        (V4, "holder", "\"h\""),
        (V4, "ops", "[[\"a\",\"40\"]]"),
        (V4, "evicted", "null"),
        (V4, "quarantine", "null"),
        (V2, "holder", "\"h\""),
        (V2, "ops", "{\"a\":\"40\"}"),
        (V2, "evicted", "null"),
        (ISSUER, "v", "2"),
        (ISSUER, "epoch", "\"1\""),
        (ISSUER, "id", "\"1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\""),
        (ISSUER, "holder", "\"a\""),
        (ISSUER, "expiresAt", "\"5\""),
        (ISSUER, "ttlMs", "\"5\""),
        (ISSUER, "requestId", "null"),
    ] {
        let member = format!("\"{field}\":{value}");
        // Duplicate (same value, or null first), unknown (near names), missing.
        bad.push(with(text, &member, &format!("{member},{member}")));
        bad.push(with(text, &member, &format!("\"{field}\":null,{member}")));
        bad.push(with(
            text,
            &member,
            &format!("{member},\"{field}_\":{value}"),
        ));
        bad.push(with(
            text,
            &member,
            &format!("{member},\"{}\":{value}", field.to_uppercase()),
        ));
        bad.push(match text.find(&format!("{member},")) {
            Some(_) => with(text, &format!("{member},"), ""),
            None => with(text, &format!(",{member}"), ""),
        });
        if value != "null" && field != "holder" {
            bad.push(with(text, &member, &format!("\"{field}\":null")));
        }
    }
    bad.push(with(V2, "{\"a\":\"40\"}", "{\"a\":\"40\",\"a\":\"40\"}"));
    bad.push(with(
        V4,
        "[[\"a\",\"40\"]]",
        "[[\"a\",\"40\"],[\"a\",\"41\"]]",
    ));
    bad.push(with(
        V2,
        "\"evicted\":null",
        "\"evicted\":null,\"quarantine\":null",
    ));
    bad.push(with(ISSUER, "\"v\":2", "\"v\":1"));
    // Not JSON of the shape: text, escapes, nesting, trailing text.
    for (from, to) in [
        ("\"h\"", "\"\\ud800\""),
        ("\"h\"", "\"\\udc00\""),
        ("\"h\"", "\"\\ud800\\u0041\""),
        ("\"h\"", "\"\\x\""),
        ("\"h\"", "\"a\nb\""),
        ("\"h\"", "\"a\u{0}b\""),
        ("\"h\"", "true"),
        ("\"h\"", "[\"h\"]"),
        ("\"h\"", "{\"h\":1}"),
        ("\"h\"", "\"h"),
        ("null}", "null}x"),
        ("null}", "null},"),
        ("null}", "null,}"),
        // What serde-json-wasm alone would read (`not_json`).
        ("\"h\"", "\"a\tb\""),
        ("[[", "[,["),
        ("[\"a\"", "[ ,\"a\""),
        ("\"h\"", "\"\\ud800\\n\\udc00\""),
        ("\"h\"", "\"\\uD800\\u0041\\uDC00\""),
        ("{\"v\"", "{v"),
        ("{\"v\"", "{'v'"),
    ] {
        bad.push(with(V4, from, to));
    }
    for t in [
        "",
        " ",
        "{",
        "[]",
        "null",
        "\"\"",
        "41",
        "{\"v\":4,\"mark\":\"41\"",
        "\u{feff}{\"v\":1,\"mark\":\"1\"}",
    ] {
        bad.push(t.to_owned());
    }
    assert_eq!(bad.len(), 281);
    for text in &bad {
        let state = ResourceState::from_json(text);
        let issuer = IssuerState::from_json(text);
        assert!(
            state.is_err() && issuer.is_err(),
            "{text}: {state:?} {issuer:?}"
        );
    }
    // The valid texts themselves, and what the old reader also accepted:
    // whitespace, `\/`, surrogate pairs, any member order.
    assert!(ResourceState::from_json(V4).is_ok() && ResourceState::from_json(V2).is_ok());
    assert!(IssuerState::from_json(ISSUER).is_ok());
    let spaced = " \t\n\r{ \"holder\" :\"\\ud83d\\udd12\\/\" , \"v\":4,\"ops\":[ [ \"a\" , \"40\" ] ],\"quarantine\":null,\"evicted\":null,\"mark\":\"41\"}\n";
    assert_eq!(
        ResourceState::from_json(spaced).map(|s| s.holder),
        Ok(Some("🔒/".to_owned()))
    );
}
