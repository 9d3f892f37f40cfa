//! A minimal, strict JSON reader and string writer for persisted records.
//!
//! Persisted issuer state crosses the Wasm boundary as one JSON string (one
//! crossing instead of a dozen property reads), and is decoded in Rust by the
//! same code the native tests run. `serde_json` would do it too but adds about
//! 40 KB to the `.wasm`; the records need only this subset of JSON:
//!
//! * objects (no duplicate keys), arrays, strings (every escape, `\uXXXX`
//!   with surrogate pairs), `null`, and non-negative integers without sign,
//!   fraction or exponent that fit in `u64`;
//! * booleans, fractions, exponents, negative numbers, lone surrogates,
//!   control characters in strings, trailing text and nesting (of objects
//!   and arrays together) deeper than [`MAX_DEPTH`] are errors.
//!
//! Errors are plain messages; callers wrap them as `CORRUPT_STATE`.

/// The deepest nesting of objects and arrays accepted (the issuer state needs
/// 2, the resource state 3).
pub const MAX_DEPTH: usize = 4;

/// A parsed value of the subset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// `null`
    Null,
    /// A non-negative integer.
    Int(u64),
    /// A string.
    Str(String),
    /// An object, members in text order, keys unique.
    Obj(Vec<(String, Value)>),
    /// An array, elements in order.
    Arr(Vec<Value>),
}

/// Parses `text` as one value of the subset, with nothing after it but whitespace.
pub fn parse(text: &str) -> Result<Value, String> {
    let mut p = Parser {
        s: text.as_bytes(),
        i: 0,
    };
    let v = p.value(0)?;
    p.ws();
    if p.i != p.s.len() {
        return Err(format!("unexpected text after the value at byte {}", p.i));
    }
    Ok(v)
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.s.get(self.i) {
            self.i += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn expect(&mut self, b: u8) -> Result<(), String> {
        if self.peek() == Some(b) {
            self.i += 1;
            Ok(())
        } else {
            Err(format!("expected '{}' at byte {}", b as char, self.i))
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, String> {
        self.ws();
        match self.peek() {
            Some(b'{') => self.object(depth + 1),
            Some(b'"') => self.string().map(Value::Str),
            Some(b'n') => {
                if self.s[self.i..].starts_with(b"null") {
                    self.i += 4;
                    Ok(Value::Null)
                } else {
                    Err(format!("unexpected token at byte {}", self.i))
                }
            }
            Some(b'0'..=b'9') => self.integer(),
            Some(b'-') => Err("negative numbers are not allowed".to_owned()),
            Some(b'[') => self.array(depth + 1),
            Some(b't' | b'f') => Err("booleans are not allowed".to_owned()),
            Some(_) => Err(format!("unexpected token at byte {}", self.i)),
            None => Err("unexpected end of text".to_owned()),
        }
    }

    fn object(&mut self, depth: usize) -> Result<Value, String> {
        if depth > MAX_DEPTH {
            return Err(format!("objects nested deeper than {MAX_DEPTH}"));
        }
        self.expect(b'{')?;
        let mut members: Vec<(String, Value)> = Vec::new();
        self.ws();
        if self.peek() == Some(b'}') {
            self.i += 1;
            return Ok(Value::Obj(members));
        }
        loop {
            self.ws();
            let key = self.string()?;
            if members.iter().any(|(k, _)| *k == key) {
                return Err(format!("duplicate key {key:?}"));
            }
            self.ws();
            self.expect(b':')?;
            let value = self.value(depth)?;
            members.push((key, value));
            self.ws();
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b'}') => {
                    self.i += 1;
                    return Ok(Value::Obj(members));
                }
                _ => return Err(format!("expected ',' or '}}' at byte {}", self.i)),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Value, String> {
        if depth > MAX_DEPTH {
            return Err(format!("objects and arrays nested deeper than {MAX_DEPTH}"));
        }
        self.expect(b'[')?;
        let mut items = Vec::new();
        self.ws();
        if self.peek() == Some(b']') {
            self.i += 1;
            return Ok(Value::Arr(items));
        }
        loop {
            items.push(self.value(depth)?);
            self.ws();
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b']') => {
                    self.i += 1;
                    return Ok(Value::Arr(items));
                }
                _ => return Err(format!("expected ',' or ']' at byte {}", self.i)),
            }
        }
    }

    fn integer(&mut self) -> Result<Value, String> {
        let start = self.i;
        while let Some(b'0'..=b'9') = self.peek() {
            self.i += 1;
        }
        if let Some(b'.' | b'e' | b'E') = self.peek() {
            return Err("numbers must be integers (no fraction or exponent)".to_owned());
        }
        let digits = &self.s[start..self.i];
        if digits.len() > 1 && digits[0] == b'0' {
            return Err("numbers must not have leading zeros".to_owned());
        }
        let mut n: u64 = 0;
        for &d in digits {
            n = n
                .checked_mul(10)
                .and_then(|n| n.checked_add(u64::from(d - b'0')))
                .ok_or_else(|| "number exceeds 2^64-1".to_owned())?;
        }
        Ok(Value::Int(n))
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let h = self
            .s
            .get(self.i..self.i + 4)
            .ok_or_else(|| "truncated \\u escape".to_owned())?;
        let mut v = 0u32;
        for &c in h {
            let d = (c as char)
                .to_digit(16)
                .ok_or_else(|| "bad \\u escape".to_owned())?;
            v = v * 16 + d;
        }
        self.i += 4;
        Ok(v)
    }

    fn string(&mut self) -> Result<String, String> {
        self.expect(b'"')?;
        let mut out = String::new();
        loop {
            let start = self.i;
            while let Some(c) = self.peek() {
                if c == b'"' || c == b'\\' || c < 0x20 {
                    break;
                }
                self.i += 1;
            }
            // The input is a &str and we stopped only at ASCII bytes, so this
            // slice is on character boundaries.
            out.push_str(
                std::str::from_utf8(&self.s[start..self.i])
                    .map_err(|_| "invalid UTF-8 in string".to_owned())?,
            );
            match self.peek() {
                Some(b'"') => {
                    self.i += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.i += 1;
                    let e = self.peek().ok_or_else(|| "truncated escape".to_owned())?;
                    self.i += 1;
                    match e {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let hi = self.hex4()?;
                            let code = if (0xD800..0xDC00).contains(&hi) {
                                if !self.s[self.i..].starts_with(b"\\u") {
                                    return Err("lone surrogate in \\u escape".to_owned());
                                }
                                self.i += 2;
                                let lo = self.hex4()?;
                                if !(0xDC00..0xE000).contains(&lo) {
                                    return Err("lone surrogate in \\u escape".to_owned());
                                }
                                0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                            } else if (0xDC00..0xE000).contains(&hi) {
                                return Err("lone surrogate in \\u escape".to_owned());
                            } else {
                                hi
                            };
                            out.push(
                                char::from_u32(code).ok_or_else(|| "bad \\u escape".to_owned())?,
                            );
                        }
                        _ => return Err("unknown escape in string".to_owned()),
                    }
                }
                Some(_) => return Err("control character in string".to_owned()),
                None => return Err("unterminated string".to_owned()),
            }
        }
    }
}

/// Appends `s` as a JSON string literal (quotes, `\"`, `\\`, and control
/// characters escaped; everything else as is).
pub fn write_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.push_str("\\u00");
                out.push(HEX[(c as usize) >> 4] as char);
                out.push(HEX[(c as usize) & 15] as char);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn subset() {
        assert_eq!(
            parse(r#" {"a" : 1, "b":"x\"\\\/\b\f\n\r\t\u00e9\ud83d\udd12", "c":null, "d":{}} "#),
            Ok(Value::Obj(vec![
                ("a".into(), Value::Int(1)),
                ("b".into(), Value::Str("x\"\\/\u{8}\u{c}\n\r\té🔒".into())),
                ("c".into(), Value::Null),
                ("d".into(), Value::Obj(vec![])),
            ]))
        );
        assert_eq!(parse("18446744073709551615"), Ok(Value::Int(u64::MAX)));
        for bad in [
            "",
            "{",
            "{}x",
            "[",
            "[1,]",
            "[,1]",
            "[1 2]",
            "[[[[[]]]]]",
            r#"{"a":[{"b":[[]]}]}"#,
            "true",
            "1.0",
            "1e3",
            "-1",
            "01",
            "18446744073709551616",
            r#"{"a":1,"a":2}"#,
            r#"{"a":1,}"#,
            r#"{a:1}"#,
            r#""\ud800""#,
            r#""\udc00""#,
            r#""\ud800\u0041""#,
            r#""\x""#,
            "\"a\nb\"",
            r#""abc"#,
            "nul",
            r#"{"a":{"b":{"c":{"d":{}}}}}"#,
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
        assert!(parse(r#"{"a":{"b":{"c":{}}}}"#).is_ok());
        assert_eq!(
            parse(r#"{"a":[["x","1"], [] ,[null]]}"#),
            Ok(Value::Obj(vec![(
                "a".into(),
                Value::Arr(vec![
                    Value::Arr(vec![Value::Str("x".into()), Value::Str("1".into())]),
                    Value::Arr(vec![]),
                    Value::Arr(vec![Value::Null]),
                ])
            )]))
        );
        assert_eq!(parse("[]"), Ok(Value::Arr(vec![])));
    }

    proptest! {
        /// No text makes the reader panic (arbitrary strings, and JSON-like ones).
        #[test]
        fn never_panics(s in any::<String>(), j in r#"[\{\}\[\]":,0-9a-z\\ .eE+-]{0,40}"#) {
            let _ = parse(&s);
            let _ = parse(&j);
            let _ = crate::issuer::IssuerState::from_json(&s);
            let _ = crate::issuer::IssuerState::from_json(&j);
            let _ = crate::state::ResourceState::from_json(&s);
            let _ = crate::state::ResourceState::from_json(&j);
        }

        /// Every string survives write → parse, and matches serde_json both ways.
        #[test]
        fn strings_round_trip(s in any::<String>()) {
            let mut text = String::new();
            write_str(&mut text, &s);
            prop_assert_eq!(parse(&text), Ok(Value::Str(s.clone())));
            let theirs: String = serde_json::from_str(&text).unwrap();
            prop_assert_eq!(&theirs, &s);
            let serde_text = serde_json::to_string(&s).unwrap();
            prop_assert_eq!(parse(&serde_text), Ok(Value::Str(s)));
        }
    }
}
