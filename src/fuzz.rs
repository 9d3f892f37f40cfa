//! Deterministic mutation fuzzers for the decoders of stored text (docs/decisions/fuzzing.md):
//! the resource state (formats v1–v4), the issuer record (formats 1 and 2; the wire form and
//! the checked form) and the token header grammar. Each target starts from a
//! corpus of valid texts and applies 1–4 seeded mutations per execution (bit
//! flips, byte replacements and insertions from an alphabet and a dictionary of
//! JSON fragments, deletions, truncations, splices of two corpus entries,
//! random bytes). Checks on every input: no panic, and
//!   * state / issuer: whatever decodes re-encodes to text that decodes to the
//!     same value, and encoding is a fixed point (`to_json` of that is equal);
//!   * token: whatever parses is exactly the canonical decimal of its value.
//!
//! `scripts/fuzz.sh` runs them (`FUZZ_TARGET`, `FUZZ_EXECS`, `FUZZ_SEED`).
//! These tests are `#[ignore]`d: `cargo test` alone does not run them.

use crate::issuer::{IssuerState, WireIssuerState};
use crate::state::ResourceState;
use crate::token::parse_token;

const ALPHABET: &[u8] =
    b"{}[]\":,0123456789-+.eEtrufalsn\\ \t\nvmarkholderopsevictedquarantine\x00\x7f\xc3\xa9";

const DICTIONARY: &[&str] = &[
    "\"v\":1",
    "\"v\":2",
    "\"v\":3",
    "\"v\":4",
    "\"v\":5",
    "\"v\":-1",
    "\"v\":1.0",
    "\"v\":1e0",
    "\"mark\":\"0\"",
    "\"mark\":\"18446744073709551615\"",
    "\"mark\":\"18446744073709551616\"",
    "\"mark\":\"01\"",
    "\"holder\":null",
    "\"holder\":\"\"",
    "\"ops\":{}",
    "\"ops\":[]",
    "\"ops\":[[\"a\",\"0\"]]",
    "\"ops\":[[\"a\",\"0\",\"00000000000000000000000000000000\"]]",
    "\"ops\":{\"a\":\"0\"}",
    "\"evicted\":null",
    "\"evicted\":\"5\"",
    "\"quarantine\":null",
    "\"quarantine\":\"7\"",
    "\"epoch\":\"0\"",
    "\"lease\":null",
    "\"lease\":{\"holder\":\"h\",\"expiresAt\":\"9007199254740991\",\"requestId\":null}",
    "\"expiresAt\":\"9007199254740992\"",
    "\"requestId\":\"\"",
    "\"ttlMs\":\"30000\"",
    "\"ttlMs\":\"0\"",
    "\"id\":\"41.HBaK2wDSq83vEjRWeJq83vEjRWeJqw\"",
    "\"id\":\"\"",
    "\\u0000",
    "\\ud800",
    "\\udc00\\ud800",
    "\\ud83d\\ude00",
    "\\\"",
    "\\\\",
    "\\/",
    "9007199254740993",
    "18446744073709551615",
    "-0",
    "1e400",
    "0.5",
    "true",
    "false",
    "null",
    "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
    "{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":{",
    ",",
    "\"\"",
    "é",
    "\u{10ffff}",
];

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn mutate(rng: &mut Rng, corpus: &[String], out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(corpus[rng.below(corpus.len())].as_bytes());
    for _ in 0..=rng.below(4) {
        let n = out.len();
        match rng.next() % 10 {
            0 if n > 0 => {
                let i = rng.below(n);
                out[i] ^= 1 << (rng.next() % 8);
            }
            1 if n > 0 => {
                let i = rng.below(n);
                out[i] = ALPHABET[rng.below(ALPHABET.len())];
            }
            2 => {
                let i = rng.below(n + 1);
                out.insert(i, ALPHABET[rng.below(ALPHABET.len())]);
            }
            3 | 4 => {
                let word = DICTIONARY[rng.below(DICTIONARY.len())].as_bytes();
                let i = rng.below(n + 1);
                out.splice(i..i, word.iter().copied());
            }
            5 if n > 0 => {
                // replace a run with a dictionary word
                let i = rng.below(n);
                let j = (i + 1 + rng.below(12)).min(n);
                let word = DICTIONARY[rng.below(DICTIONARY.len())].as_bytes();
                out.splice(i..j, word.iter().copied());
            }
            6 if n > 0 => {
                let i = rng.below(n);
                let j = (i + 1 + rng.below(8)).min(n);
                out.drain(i..j);
            }
            7 => out.truncate(rng.below(n + 1)),
            8 => {
                let other = corpus[rng.below(corpus.len())].as_bytes();
                let cut = rng.below(other.len() + 1);
                let at = rng.below(n + 1);
                out.truncate(at);
                out.extend_from_slice(&other[cut..]);
            }
            _ => {
                let len = rng.below(200);
                out.clear();
                for _ in 0..len {
                    out.push((rng.next() % 256) as u8);
                }
            }
        }
    }
}

/// Runs `check` on `FUZZ_EXECS` (default `default_execs`) mutated inputs and
/// prints one line: `fuzz <name>: N executions in S s, 0 findings (K accepted)`.
/// `check` returns whether the input was accepted, and panics on a finding.
fn run(name: &str, corpus: Vec<String>, default_execs: u64, mut check: impl FnMut(&str) -> bool) {
    let execs: u64 = std::env::var("FUZZ_EXECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default_execs);
    let seed: u64 = std::env::var("FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x9e37_79b9_7f4a_7c15);
    let mut rng = Rng(seed | 1);
    for c in &corpus {
        assert!(check(c), "fuzz {name}: a corpus entry is refused: {c}");
    }
    let started = std::time::Instant::now();
    let mut buf = Vec::new();
    let mut accepted = 0u64;
    for _ in 0..execs {
        mutate(&mut rng, &corpus, &mut buf);
        let text = String::from_utf8_lossy(&buf);
        if check(&text) {
            accepted += 1;
        }
    }
    println!(
        "fuzz {name}: {execs} executions in {:.1} s (seed {seed}), 0 findings ({accepted} inputs accepted, each round-tripped)",
        started.elapsed().as_secs_f64()
    );
}

fn enabled(name: &str) -> bool {
    match std::env::var("FUZZ_TARGET") {
        Ok(t) => t == "all" || t.split(',').any(|x| x == name),
        Err(_) => true,
    }
}

fn states() -> Vec<String> {
    // an eviction filter: BLOOM_BYTES bytes as hex, a few bits set
    let filter: String = (0..crate::ops::BLOOM_BYTES)
        .map(|i| format!("{:02x}", if i % 7 == 0 { 1u8 << (i % 8) } else { 0 }))
        .collect();
    let mut out: Vec<String> = [
        r#"{"v":1,"mark":"41"}"#,
        r#"{"v":1,"mark":"18446744073709551615"}"#,
        r#"{"mark":"0","v":1}"#,
        r#"{"v":2,"mark":"41","holder":"node-a","ops":{"r1":"40","r2":"41"},"evicted":null}"#,
        r#"{"v":3,"mark":"41","holder":null,"ops":{},"evicted":null,"quarantine":"41"}"#,
        r#"{"v":4,"mark":"41","holder":"node-a","ops":[["r1","40"],["r2","41","9f86d081884c7d659a2feaa0c55ad015"]],"evicted":null,"quarantine":null}"#,
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    out.push(format!(
        r#"{{"v":2,"mark":"9","holder":null,"ops":{{}},"evicted":"{filter}"}}"#
    ));
    out.push(format!(r#"{{"v":3,"mark":"5","holder":"h\u00e9","ops":{{"x":"5"}},"evicted":"{filter}","quarantine":null}}"#));
    out.push(format!(
        r#"{{"v":4,"mark":"7","holder":null,"ops":[],"evicted":"fnv1a:{filter}","quarantine":"7"}}"#
    ));
    out.push(format!(r#"{{"v":4,"mark":"7","holder":"x","ops":[["a","7"]],"evicted":"{filter}","quarantine":null}}"#));
    out
}

fn owned(texts: &[&str]) -> Vec<String> {
    texts.iter().map(|s| (*s).to_owned()).collect()
}

const ISSUERS: &[&str] = &[
    r#"{"v":1,"epoch":"41","lease":{"holder":"node-a","expiresAt":"1700000030000","requestId":"r-17"}}"#,
    r#"{"v":1,"epoch":"41","lease":null}"#,
    r#"{"v":1,"epoch":"0","lease":null}"#,
    r#"{"lease":{"requestId":null,"expiresAt":"9007199254740991","holder":"\u00fc"},"epoch":"18446744073709551615","v":1}"#,
    // format 2 (stored random lease ids and the lease length: docs/decisions/lease-identity.md)
    r#"{"v":2,"epoch":"41","lease":{"id":"41.HBaK2wDSq83vEjRWeJq83vEjRWeJqw","holder":"node-a","expiresAt":"1700000030000","ttlMs":"30000","requestId":"r-17"}}"#,
    r#"{"v":2,"epoch":"7","lease":null}"#,
];

const TOKENS: &[&str] = &[
    "1",
    "42",
    "9007199254740991",
    "9007199254740993",
    "18446744073709551615",
    "10000000000000000000",
];

#[test]
#[ignore = "fuzzer; scripts/fuzz.sh runs it"]
fn fuzz_state_decoder() {
    if !enabled("state") {
        return;
    }
    run("state (v1-v4)", states(), 200_000, |text| {
        let Ok(state) = ResourceState::from_json(text) else {
            return false;
        };
        assert_round_trip(
            text,
            &state,
            ResourceState::to_json,
            ResourceState::from_json,
        );
        true
    });
}

/// Whatever decodes re-encodes to a fixed point that decodes to the same value.
fn assert_round_trip<T, E>(
    text: &str,
    state: &T,
    encode: impl Fn(&T) -> String,
    decode: impl Fn(&str) -> Result<T, E>,
) where
    T: PartialEq + std::fmt::Debug,
    E: std::fmt::Debug,
{
    let encoded = encode(state);
    let again = decode(&encoded).unwrap_or_else(|e| {
        panic!("finding: {text:?} decodes, its encoding {encoded:?} does not: {e:?}")
    });
    assert_eq!(
        &again, state,
        "finding: {text:?} re-decodes to another state via {encoded:?}"
    );
    assert_eq!(
        encode(&again),
        encoded,
        "finding: encoding of {text:?} is not a fixed point"
    );
}

#[test]
#[ignore = "fuzzer; scripts/fuzz.sh runs it"]
fn fuzz_issuer_decoder() {
    if !enabled("issuer") {
        return;
    }
    run("issuer record", owned(ISSUERS), 200_000, |text| {
        let wire = WireIssuerState::from_json(text);
        let checked = IssuerState::from_json(text);
        if let Ok(w) = &wire {
            let encoded = w.to_json();
            let again = WireIssuerState::from_json(&encoded).unwrap_or_else(|e| {
                panic!("finding: wire {text:?} decodes, {encoded:?} does not: {e:?}")
            });
            assert_eq!(
                &again, w,
                "finding: wire {text:?} re-decodes differently via {encoded:?}"
            );
        }
        let Ok(state) = checked else {
            return false;
        };
        assert!(
            wire.is_ok(),
            "finding: {text:?} is a valid issuer state but not a valid wire record"
        );
        assert_round_trip(text, &state, IssuerState::to_json, IssuerState::from_json);
        true
    });
}

#[test]
#[ignore = "fuzzer; scripts/fuzz.sh runs it"]
fn fuzz_token_parser() {
    if !enabled("token") {
        return;
    }
    run("token (parse_token)", owned(TOKENS), 200_000, |text| {
        let Ok(n) = parse_token(text) else {
            return false;
        };
        assert!(n >= 1, "finding: {text:?} parsed to 0");
        assert_eq!(
            n.to_string(),
            text,
            "finding: {text:?} parsed to {n}, not its canonical text"
        );
        true
    });
}

/// The JSON reader against an oracle: the persisted formats are read by
/// serde-json-wasm behind `format::from_text`'s pre-check
/// (docs/decisions/persisted-formats-serde.md); serde_json, the reference
/// serde JSON reader, must accept and refuse exactly the same texts as the
/// same serde types and read the same values from them.
#[test]
#[ignore = "fuzzer; scripts/fuzz.sh runs it"]
fn fuzz_json_reader_against_serde_json() {
    use crate::format::{from_text, StateText};
    if !enabled("json") {
        return;
    }
    let mut corpus = states();
    corpus.extend(owned(ISSUERS));
    run(
        "json (serde-json-wasm vs serde_json)",
        corpus,
        200_000,
        |text| {
            let ours = from_text::<StateText>(text);
            let oracle = serde_json::from_str::<StateText>(text);
            assert_eq!(
                ours.is_ok(),
                oracle.is_ok(),
                "finding: state text {text:?}: serde-json-wasm {ours:?}, serde_json {oracle:?}"
            );
            if let (Ok(a), Ok(b)) = (&ours, &oracle) {
                assert_eq!(
                    format!("{a:?}"),
                    format!("{b:?}"),
                    "finding: state text {text:?} reads differently"
                );
            }
            let ours_i = from_text::<WireIssuerState>(text);
            let oracle_i = serde_json::from_str::<WireIssuerState>(text);
            assert_eq!(
            ours_i.is_ok(),
            oracle_i.is_ok(),
            "finding: issuer text {text:?}: serde-json-wasm {ours_i:?}, serde_json {oracle_i:?}"
        );
            if let (Ok(a), Ok(b)) = (&ours_i, &oracle_i) {
                assert_eq!(a, b, "finding: issuer text {text:?} reads differently");
            }
            ours.is_ok() || ours_i.is_ok()
        },
    );
}
