//! Fencing tokens (epochs): validation of JS numbers, bigints and text.
//!
//! An epoch is an ownership generation, a `u64` ≥ 1 (DESIGN R4). The rules:
//!
//! | input | valid when |
//! |---|---|
//! | JS number | a safe integer in 1..=2^53−1 (so never rounded) |
//! | JS bigint | 1..=2^64−1 |
//! | text ([`parse_token`]) | canonical decimal: `[1-9][0-9]*`, value ≤ 2^64−1 |
//!
//! Everything else is [`TokenError::Malformed`], except absent values which are
//! [`TokenError::Missing`]. No conversion ever wraps, rounds or compares as text.

use crate::error::TokenError;

/// The largest integer a JS number holds exactly: 2^53 − 1.
pub const MAX_SAFE_INTEGER: u64 = (1u64 << 53) - 1;

/// Validates a JS number as an epoch: a safe integer ≥ 1.
///
/// `-0`, `0`, negatives, fractions, `NaN`, `±Infinity` and anything ≥ 2^53
/// (where distinct integers collapse onto one float) are malformed.
pub fn epoch_from_f64(value: f64) -> Result<u64, TokenError> {
    if value.is_nan() {
        return Err(TokenError::Malformed("NaN is not an epoch"));
    }
    if value.is_infinite() {
        return Err(TokenError::Malformed("an infinite number is not an epoch"));
    }
    if value.fract() != 0.0 {
        return Err(TokenError::Malformed("a fraction is not an epoch"));
    }
    if value < 1.0 {
        return Err(TokenError::Malformed("an epoch is at least 1"));
    }
    if value > MAX_SAFE_INTEGER as f64 {
        return Err(TokenError::Malformed(
            "a number token must be a safe integer (≤ 2^53−1); pass a bigint for larger epochs",
        ));
    }
    Ok(value as u64)
}

/// Validates an exact integer (a JS bigint already known to fit in `u64`) as an epoch.
pub fn epoch_from_u64(value: u64) -> Result<u64, TokenError> {
    if value == 0 {
        Err(TokenError::Malformed("an epoch is at least 1"))
    } else {
        Ok(value)
    }
}

/// Parses header or JSON text with the canonical decimal grammar `[1-9][0-9]*`,
/// value ≤ 2^64−1.
///
/// No sign, no leading zeros, no whitespace, no exponent, no fraction, no hex.
/// The empty string is malformed (an empty header is not a missing header; the
/// host decides what "absent" means).
pub fn parse_token(text: &str) -> Result<u64, TokenError> {
    let bytes = text.as_bytes();
    match bytes.first() {
        None => return Err(TokenError::Malformed("empty token text")),
        Some(b'0') => {
            return Err(TokenError::Malformed(
                "token text has a leading zero or is zero",
            ))
        }
        Some(_) => {}
    }
    if bytes.len() > 20 {
        return Err(TokenError::Malformed("token text exceeds 2^64−1"));
    }
    let mut value: u64 = 0;
    for &b in bytes {
        if !b.is_ascii_digit() {
            return Err(TokenError::Malformed(
                "token text must be decimal digits only (no sign, space, point, exponent)",
            ));
        }
        value = value
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(b - b'0')))
            .ok_or(TokenError::Malformed("token text exceeds 2^64−1"))?;
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers() {
        assert_eq!(epoch_from_f64(1.0), Ok(1));
        assert_eq!(epoch_from_f64(9007199254740991.0), Ok(MAX_SAFE_INTEGER));
        for bad in [
            0.0,
            -0.0,
            -1.0,
            2.5,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            9007199254740992.0,
            1e300,
            0.5,
        ] {
            assert!(
                matches!(epoch_from_f64(bad), Err(TokenError::Malformed(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn text() {
        assert_eq!(parse_token("7"), Ok(7));
        assert_eq!(parse_token("18446744073709551615"), Ok(u64::MAX));
        assert_eq!(parse_token("2147483648"), Ok(1 << 31));
        for bad in [
            "07",
            "+7",
            " 7",
            "7 ",
            "1e3",
            "2.5",
            "0",
            "-1",
            "0x10",
            "18446744073709551616",
            "",
            "99999999999999999999",
            "100000000000000000000",
            "７",
            "7\n",
        ] {
            assert!(
                matches!(parse_token(bad), Err(TokenError::Malformed(_))),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn zero_integer() {
        assert!(epoch_from_u64(0).is_err());
        assert_eq!(epoch_from_u64(u64::MAX), Ok(u64::MAX));
    }
}
