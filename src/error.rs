//! Stable error and rejection codes shared by verdicts and thrown errors.
//!
//! Every code is a stable, SCREAMING_SNAKE string that JavaScript sees as
//! `error.code` / `verdict.code`. Codes are never renamed; new ones are only added.

use thiserror::Error;

/// A stable code naming why an operation was rejected or failed.
///
/// The numeric discriminants are the wire values the binding layer returns to
/// its JavaScript wrapper on the hot path (`status - 2 == code index`); they are
/// internal and may change, the string names (see [`Code::as_str`]) may not.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Code {
    /// The token was `undefined` / `null` / absent (DESIGN R4).
    MissingToken = 0,
    /// The token was present but not a valid epoch (R4: not a safe integer ≥ 1,
    /// not a bigint in 1..2^64−1, or text outside the canonical decimal grammar).
    MalformedToken = 1,
    /// token < mark: an older ownership epoch (the seed's core rule, R2).
    StaleToken = 2,
    /// token == mark under the `strict` same-epoch policy (R2).
    SameEpochRejected = 3,
    /// Stored state could not be decoded: unknown version, damaged field (R6).
    CorruptState = 4,
    /// A host storage callback failed; the error carries the cause.
    StoreError = 5,
    /// The compare-and-set kept conflicting after the bounded number of retries.
    CommitConflict = 6,
    /// The host could not say whether the commit happened (timeout, lost reply).
    CommitUnknown = 7,
    /// A lease is held by another holder.
    LeaseHeld = 8,
    /// The lease has expired or was superseded.
    LeaseExpired = 9,
    /// The next epoch would not be representable exactly.
    EpochOverflow = 10,
    /// A signed token's signature did not verify.
    BadSignature = 11,
    /// A token issued for another scope.
    WrongScope = 12,
    /// An argument other than the token had the wrong type or value
    /// (a key that is not a string, an unknown policy name).
    InvalidArgument = 13,
    /// The API was used before the WebAssembly module was initialised (`await init()`).
    NotInitialized = 14,
    /// A signed token names a key id the resource has no key for.
    UnknownKey = 15,
    /// A signed token names a key id the resource lists as retired.
    KeyRetired = 16,
    /// A plain number or bigint where the gate requires a signed token (R9).
    UnsignedToken = 17,
    /// Higher-epoch policy `adopt-within`: the token is more than `maxJump` above the mark.
    EpochJumpTooLarge = 18,
    /// Higher-epoch policy `reject-future`: the token is above the established ceiling.
    FutureEpoch = 19,
    /// Two holders presented the same epoch: the issuer handed one epoch to two
    /// owners (a rollback or a bug). Reported, never applied (R11).
    EpochConflict = 20,
    /// The operation id may already have been applied in this epoch but fell
    /// out of the de-duplication window: the gate cannot tell, so it refuses.
    OpIdExpired = 21,
    /// The key is quarantined (after a restore or a lost state, R11): every
    /// epoch up to its floor is refused until a write or establish with an
    /// epoch above the floor lifts the quarantine.
    Quarantined = 22,
    /// The operation id was already applied in this epoch with a different
    /// fingerprint: the id was reused for another operation
    /// (docs/decisions/operation-ids.md; the
    /// IETF HTTP Idempotency-Key draft answers 422). Nothing is applied.
    OpIdReused = 23,
    /// `renew` / `release` of the issuer with a lease id and holder that are
    /// not the scope's current lease (docs/decisions/lease-identity.md). Says nothing about whose it is.
    LeaseNotHeld = 24,
    /// `acquire` with the request id of the current lease but other arguments
    /// (another holder or ttl): the id was reused for a different request.
    RequestIdReused = 25,
    /// The caller's own statements inside a fenced transaction (`Gate.transaction`)
    /// failed: the whole transaction was rolled back, the mark and the caller's data
    /// are as before; the caller's error is the `cause` (docs/decisions/own-data-transactions.md).
    CallbackFailed = 26,
    /// `fenceIn` inside the caller's transaction met an operation id already applied
    /// in this epoch: it throws so the caller's transaction rolls back and the
    /// statements are not applied twice (R10).
    DuplicateOperation = 27,
    /// The database's guard refused a change to a protected row that did not pass
    /// the fence in the same transaction, or a fence-table change that lowers a mark
    /// or writes an ill-formed state (docs/guard.md).
    GuardRefused = 28,
}

impl Code {
    /// Every code, in discriminant order.
    pub const ALL: [Code; 29] = [
        Code::MissingToken,
        Code::MalformedToken,
        Code::StaleToken,
        Code::SameEpochRejected,
        Code::CorruptState,
        Code::StoreError,
        Code::CommitConflict,
        Code::CommitUnknown,
        Code::LeaseHeld,
        Code::LeaseExpired,
        Code::EpochOverflow,
        Code::BadSignature,
        Code::WrongScope,
        Code::InvalidArgument,
        Code::NotInitialized,
        Code::UnknownKey,
        Code::KeyRetired,
        Code::UnsignedToken,
        Code::EpochJumpTooLarge,
        Code::FutureEpoch,
        Code::EpochConflict,
        Code::OpIdExpired,
        Code::Quarantined,
        Code::OpIdReused,
        Code::LeaseNotHeld,
        Code::RequestIdReused,
        Code::CallbackFailed,
        Code::DuplicateOperation,
        Code::GuardRefused,
    ];

    /// The stable string JavaScript sees.
    pub const fn as_str(self) -> &'static str {
        match self {
            Code::MissingToken => "MISSING_TOKEN",
            Code::MalformedToken => "MALFORMED_TOKEN",
            Code::StaleToken => "STALE_TOKEN",
            Code::SameEpochRejected => "SAME_EPOCH_REJECTED",
            Code::CorruptState => "CORRUPT_STATE",
            Code::StoreError => "STORE_ERROR",
            Code::CommitConflict => "COMMIT_CONFLICT",
            Code::CommitUnknown => "COMMIT_UNKNOWN",
            Code::LeaseHeld => "LEASE_HELD",
            Code::LeaseExpired => "LEASE_EXPIRED",
            Code::EpochOverflow => "EPOCH_OVERFLOW",
            Code::BadSignature => "BAD_SIGNATURE",
            Code::WrongScope => "WRONG_SCOPE",
            Code::InvalidArgument => "INVALID_ARGUMENT",
            Code::NotInitialized => "NOT_INITIALIZED",
            Code::UnknownKey => "UNKNOWN_KEY",
            Code::KeyRetired => "KEY_RETIRED",
            Code::UnsignedToken => "UNSIGNED_TOKEN",
            Code::EpochJumpTooLarge => "EPOCH_JUMP_TOO_LARGE",
            Code::FutureEpoch => "FUTURE_EPOCH",
            Code::EpochConflict => "EPOCH_CONFLICT",
            Code::OpIdExpired => "OP_ID_EXPIRED",
            Code::Quarantined => "QUARANTINED",
            Code::OpIdReused => "OP_ID_REUSED",
            Code::LeaseNotHeld => "LEASE_NOT_HELD",
            Code::RequestIdReused => "REQUEST_ID_REUSED",
            Code::CallbackFailed => "CALLBACK_FAILED",
            Code::DuplicateOperation => "DUPLICATE_OPERATION",
            Code::GuardRefused => "GUARD_REFUSED",
        }
    }
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a token value is not a valid epoch.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum TokenError {
    /// No token at all (`undefined`, `null`, an absent argument or header).
    #[error("missing fence token")]
    Missing,
    /// A token that is present but is not an epoch; the text says which rule it broke.
    #[error("malformed fence token: {0}")]
    Malformed(&'static str),
}

impl TokenError {
    /// The stable code for this error.
    pub const fn code(&self) -> Code {
        match self {
            TokenError::Missing => Code::MissingToken,
            TokenError::Malformed(_) => Code::MalformedToken,
        }
    }
}

/// Why stored state could not be decoded (always [`Code::CorruptState`]).
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("corrupt fencing state: {0}")]
pub struct StateError(pub String);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_texts() {
        assert_eq!(
            TokenError::Malformed("x y").to_string(),
            "malformed fence token: x y"
        );
        assert_eq!(TokenError::Missing.to_string(), "missing fence token");
        assert_eq!(
            StateError("bad".into()).to_string(),
            "corrupt fencing state: bad"
        );
    }
}
