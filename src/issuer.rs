//! The lease-bound epoch issuer: pure state transitions, no clock, no I/O.
//!
//! An issuer keeps, per scope, the last epoch it handed out and the lease that
//! epoch belongs to. A holder gets a new epoch only by acquiring again (DESIGN
//! R8; the seed's section "把递增编号绑定到所有权": a paused holder keeps its
//! old number and cannot ask for a new one without re-acquiring ownership).
//! The host persists the state this module returns through its store *before*
//! it hands the epoch to anyone, so after a crash the counter never goes back
//! and never repeats (the seed's "计数器回退" section).
//!
//! Every transition takes the decoded state of one scope and answers a
//! [`Step`]: a result, and the next state to commit — or `None` when nothing
//! changes (then the host writes nothing and the stored bytes stay as they
//! were). Errors ([`IssuerError`]) never change anything either.
//!
//! Time: `now_ms` and `ttl_ms` are milliseconds supplied by the host, safe
//! integers (0..=2^53−1, `ttl_ms` ≥ 1). A lease is live at `now` iff
//! `now < expires_at`. Time decides only whether a lease is live; it is never
//! a token, and a clock that goes backwards can make a lease look live longer
//! but can never lower or repeat an epoch.
//!
//! # Persisted state, format version 2
//!
//! ```json
//! {"v":2,"epoch":"41","lease":{"id":"41.HBaK2wDSq83vEjRWeJq83vEjRWeJqw","holder":"node-a","expiresAt":"1700000030000","ttlMs":"30000","requestId":"r-17"}}
//! {"v":2,"epoch":"41","lease":null}
//! ```
//!
//! * `v` — the number `2`.
//! * `epoch` — the last epoch issued for the scope, canonical decimal text
//!   (`"0"` or `[1-9][0-9]*`, ≤ 2^64−1): text because JSON numbers above 2^53
//!   lose precision in JavaScript.
//! * `lease` — the lease of that epoch, or `null` once it was released (or
//!   when the state was raised). `id` is the lease id, exactly
//!   `"<epoch>.<tag><key>"`: `tag` and `key` are canonical unpadded base64url
//!   texts of 6 and 16 bytes (8 and 22 characters); `holder` is a non-empty string;
//!   `expiresAt` the expiry in host milliseconds as decimal text (≤ 2^53−1);
//!   `ttlMs` the acquiring request's lease length (decimal text, 1..=2^53−1,
//!   kept unchanged by renewals: it is part of the request's fingerprint);
//!   `requestId` the acquiring request's id (a non-empty string) or `null`.
//!
//! # Format version 1 (still read)
//!
//! ```json
//! {"v":1,"epoch":"41","lease":{"holder":"node-a","expiresAt":"1700000030000","requestId":"r-17"}}
//! {"v":1,"epoch":"41","lease":null}
//! ```
//!
//! A version-1 lease has no stored id: its id is derived, `"<scope>#<epoch>"`,
//! and its ttl is not known. Such a lease keeps working for its holder (renew,
//! release) until it ends; renewing it rewrites the record in version 1, so it
//! keeps its id. Every other write — any acquisition, a release, a raise —
//! writes version 2.
//!
//! In both versions every field is required and no other field is allowed;
//! anything else is a [`StateError`] (code `CORRUPT_STATE`), never "a fresh
//! scope at epoch 0". A scope with no stored record at all is the only fresh
//! scope.
//!
//! # Lease ids
//!
//! A lease id is `"<epoch>.<tag><key>"`, e.g. `41.HBaK2wDSq83vEjRWeJq83vEjRWeJqw`:
//!
//! * the epoch, for operators;
//! * `tag`: the first 6 bytes of SHA-256(scope), 8 characters — not a
//!   secret; it keeps a lease id of one scope from being read as an epoch of
//!   another (so presenting it to the wrong scope is `LEASE_NOT_HELD`, not a
//!   false alarm of a restored issuer). The scope itself is not in the id:
//!   it may be any text of any length;
//! * `key`: 128 random bits drawn by the host from its CSPRNG
//!   (`crypto.getRandomValues`) and passed in ([`AcquireRequest::random`]),
//!   so this module stays pure: 22 characters. The key is what makes the id
//!   unguessable and unique per acquisition, even when a restored issuer hands
//!   an epoch out a second time.
//!
//! The id is at most [`MAX_LEASE_ID_LEN`] (51) bytes of `[0-9A-Za-z._-]`:
//! safe in URLs, headers and signed tokens (≤ 128 bytes).
//!
//! `renew` and `release` take the lease id and the holder, and act only when
//! both match the scope's current lease exactly; otherwise they answer
//! [`IssuerResult::NotHeld`] (`LEASE_NOT_HELD`) without saying whose lease it
//! is, or [`IssuerResult::Expired`] / `released: false` when the id names an
//! epoch whose lease is over in any case (an older epoch, or the current one
//! after it was released or revoked).

use serde::{Deserialize, Serialize, Serializer};
use thiserror::Error;

use crate::error::{Code, StateError};
use crate::format::quoted;
/// The record's serde types and format versions (the text codec lives in [`crate::format`]).
pub use crate::format::{WireIssuerState, WireLease, ISSUER_STATE_VERSION, ISSUER_STATE_VERSION_1};
use crate::signed::{b64_decode_canonical, b64_encode};
use crate::token::{parse_token, MAX_SAFE_INTEGER};
use sha2::{Digest, Sha256};

/// Random bytes in a lease id (128 bits).
pub const LEASE_KEY_BYTES: usize = 16;

/// Base64url characters of a lease key.
const LEASE_KEY_LEN: usize = 22;

/// The longest acquire `requestId`, in UTF-8 bytes (checked by the JS
/// binding before the call; it is kept in the record while its lease lives).
pub const MAX_REQUEST_ID_BYTES: usize = 256;

/// Bytes of SHA-256(scope) in a lease id's scope tag.
const SCOPE_TAG_BYTES: usize = 6;

/// Base64url characters of a scope tag.
const SCOPE_TAG_LEN: usize = 8;

/// The longest lease id this module issues, in bytes: 20 epoch digits, `.`,
/// 8 scope-tag and 22 key characters.
pub const MAX_LEASE_ID_LEN: usize = 20 + 1 + SCOPE_TAG_LEN + LEASE_KEY_LEN;

/// The largest epoch the issuer may hand out: decided by how the caller
/// represents tokens, so that no epoch is ever rounded (R4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EpochLimit {
    /// Tokens are JS numbers: at most 2^53−1.
    Number,
    /// Tokens may be bigints: at most 2^64−1.
    BigInt,
}

impl EpochLimit {
    /// The largest epoch that may be issued.
    pub const fn max(self) -> u64 {
        match self {
            EpochLimit::Number => MAX_SAFE_INTEGER,
            EpochLimit::BigInt => u64::MAX,
        }
    }
}

/// How a lease is identified, by the format it was granted under.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LeaseForm {
    /// Format 1: the id is derived, `"<scope>#<epoch>"`; the acquiring ttl is unknown.
    Derived,
    /// Format 2: a stored random id and the acquiring request's ttl.
    Keyed {
        /// The lease id, `"<epoch>.<22 base64url characters>"`.
        id: String,
        /// The acquiring request's `ttl_ms` (renewals do not change it).
        ttl_ms: u64,
    },
}

/// The lease of the scope's last epoch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lease {
    /// Who holds it (non-empty).
    pub holder: String,
    /// Expiry in host milliseconds; live while `now < expires_at`.
    pub expires_at: u64,
    /// The id of the acquire request that granted it, for idempotent retries.
    pub request_id: Option<String>,
    /// Its id (stored, or derived for a format-1 lease).
    pub form: LeaseForm,
}

impl Lease {
    /// The lease id of this lease, the lease of `epoch` in `scope`.
    pub fn id(&self, scope: &str, epoch: u64) -> String {
        match &self.form {
            LeaseForm::Derived => derived_lease_id(scope, epoch),
            LeaseForm::Keyed { id, .. } => id.clone(),
        }
    }

    /// The acquiring request's ttl, when it was recorded (format 2).
    pub fn ttl_ms(&self) -> Option<u64> {
        match &self.form {
            LeaseForm::Derived => None,
            LeaseForm::Keyed { ttl_ms, .. } => Some(*ttl_ms),
        }
    }
}

/// An issuer's lease as `Issuer.current` reports it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LeaseRecord {
    /// The lease id.
    pub lease_id: String,
    /// Who holds it.
    pub holder: String,
    /// Expiry in host ms; live while `now < expires_at`.
    #[serde(serialize_with = "serialize_epoch")]
    pub expires_at: u64,
    /// The acquiring request's id.
    pub request_id: Option<String>,
}

/// A scope's issuer record as `Issuer.current` reports it (epoch 0: never acquired).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IssuerRecord {
    /// The scope.
    pub scope: String,
    /// The last epoch issued.
    #[serde(serialize_with = "serialize_epoch")]
    pub epoch: u64,
    /// The lease of `epoch`, `None` when released or never acquired.
    pub lease: Option<LeaseRecord>,
}

/// The decoded issuer state of one scope. `Default` is a fresh scope (epoch 0, no lease).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IssuerState {
    /// The last epoch issued (0 = none yet).
    pub epoch: u64,
    /// The lease of `epoch`, `None` when released or never acquired.
    pub lease: Option<Lease>,
}

fn decimal(text: &str, what: &str) -> Result<u64, StateError> {
    if text == "0" {
        return Ok(0);
    }
    parse_token(text).map_err(|_| {
        StateError(format!(
            "issuer {what} {} is not canonical decimal text in 0 to 2^64-1",
            quoted(text)
        ))
    })
}

/// `n` as decimal text (without the formatting machinery of `to_string`).
fn dec(n: u64) -> String {
    crate::format::decimal_str(n, &mut [0u8; 20]).to_owned()
}

impl IssuerState {
    /// The wire form of this state: format 1 while it holds a format-1 lease
    /// (a renewed derived-id lease keeps its form), format 2 otherwise.
    pub fn to_wire(&self) -> WireIssuerState {
        self.clone().into_wire()
    }

    /// [`IssuerState::to_wire`], moving the lease's texts instead of copying
    /// them (the binding's next record: `crate::wasm::issuer`).
    pub fn into_wire(self) -> WireIssuerState {
        let v1 = matches!(
            self.lease,
            Some(Lease {
                form: LeaseForm::Derived,
                ..
            })
        );
        WireIssuerState {
            v: if v1 {
                ISSUER_STATE_VERSION_1
            } else {
                ISSUER_STATE_VERSION
            },
            epoch: dec(self.epoch),
            lease: self.lease.map(|l| {
                let (id, ttl_ms) = match l.form {
                    LeaseForm::Derived => (None, None),
                    LeaseForm::Keyed { id, ttl_ms } => (Some(id), Some(dec(ttl_ms))),
                };
                WireLease {
                    id,
                    holder: l.holder,
                    expires_at: dec(l.expires_at),
                    ttl_ms,
                    request_id: l.request_id,
                }
            }),
        }
    }

    /// Validates a wire form. Errors are `CORRUPT_STATE`.
    pub fn from_wire(wire: WireIssuerState) -> Result<IssuerState, StateError> {
        if wire.v != ISSUER_STATE_VERSION && wire.v != ISSUER_STATE_VERSION_1 {
            return Err(StateError(format!(
                "unsupported issuer state format version {} (this build reads versions 1 and 2)",
                wire.v
            )));
        }
        let epoch = decimal(&wire.epoch, "epoch")?;
        let lease = match wire.lease {
            None => None,
            Some(l) => {
                if epoch == 0 {
                    return Err(StateError(
                        "issuer state has a lease but epoch 0 (no epoch was issued)".to_owned(),
                    ));
                }
                if l.holder.is_empty() {
                    return Err(StateError("issuer lease holder is empty".to_owned()));
                }
                let expires_at = decimal(&l.expires_at, "lease expiresAt")?;
                if expires_at > MAX_SAFE_INTEGER {
                    return Err(StateError(format!(
                        "issuer lease expiresAt {expires_at} exceeds 2^53-1 ms"
                    )));
                }
                if l.request_id.as_deref() == Some("") {
                    return Err(StateError("issuer lease requestId is empty".to_owned()));
                }
                let form = match (wire.v, l.id, &l.ttl_ms) {
                    (ISSUER_STATE_VERSION_1, None, None) => LeaseForm::Derived,
                    (ISSUER_STATE_VERSION, Some(id), Some(ttl)) => {
                        if keyed_parts(&id).map(|(e, _)| e) != Some(epoch) {
                            return Err(StateError(format!(
                                "issuer lease id {} is not \"{epoch}.\" and 30 characters of canonical base64url (6 + 16 bytes)",
                                quoted(&id)
                            )));
                        }
                        let ttl_ms = decimal(ttl, "lease ttlMs")?;
                        if ttl_ms == 0 || ttl_ms > MAX_SAFE_INTEGER {
                            return Err(StateError(format!(
                                "issuer lease ttlMs {ttl_ms} is not in 1 to 2^53-1 ms"
                            )));
                        }
                        LeaseForm::Keyed { id, ttl_ms }
                    }
                    _ => {
                        return Err(StateError(format!(
                            "issuer lease fields do not match format version {}",
                            wire.v
                        )))
                    }
                };
                Some(Lease {
                    holder: l.holder,
                    expires_at,
                    request_id: l.request_id,
                    form,
                })
            }
        };
        Ok(IssuerState { epoch, lease })
    }

    /// Decodes the JSON text of a persisted state (format version 1 or 2,
    /// strict: every field required, no other field, no duplicate). Errors are
    /// `CORRUPT_STATE`.
    pub fn from_json(text: &str) -> Result<IssuerState, StateError> {
        IssuerState::from_wire(WireIssuerState::from_json(text)?)
    }

    /// The JSON text of this state's wire form, e.g.
    /// `{"v":2,"epoch":"41","lease":null}`.
    pub fn to_json(&self) -> String {
        self.to_wire().to_json()
    }

    /// The record `Issuer.current` reports for `scope`.
    pub fn record(&self, scope: &str) -> IssuerRecord {
        IssuerRecord {
            scope: scope.to_owned(),
            epoch: self.epoch,
            lease: self.lease.as_ref().map(|l| LeaseRecord {
                lease_id: l.id(scope, self.epoch),
                holder: l.holder.clone(),
                expires_at: l.expires_at,
                request_id: l.request_id.clone(),
            }),
        }
    }

    /// The lease, when it is live at `now_ms` (`now < expires_at`).
    pub fn live_lease(&self, now_ms: u64) -> Option<&Lease> {
        self.lease.as_ref().filter(|l| now_ms < l.expires_at)
    }

    /// The id of the current lease, `None` when there is none.
    pub fn lease_id(&self, scope: &str) -> Option<String> {
        self.lease.as_ref().map(|l| l.id(scope, self.epoch))
    }
}

/// The derived id of a format-1 lease: `"<scope>#<epoch>"`.
pub fn derived_lease_id(scope: &str, epoch: u64) -> String {
    format!("{scope}#{epoch}")
}

/// The scope tag of a lease id: the unpadded base64url text of the first 6
/// bytes of SHA-256(scope). Not a secret: it tells a lease id of one scope
/// from another's, so that a lease id presented to the wrong scope is not
/// mistaken for one from the future (a restored issuer).
fn scope_tag(scope: &str) -> String {
    let digest = Sha256::digest(scope.as_bytes());
    let mut out = String::with_capacity(SCOPE_TAG_LEN);
    b64_encode(&digest[..SCOPE_TAG_BYTES], &mut out);
    out
}

/// How many scopes' tags [`memo_scope_tag`] remembers.
const TAG_MEMO_SIZE: usize = 16;

thread_local! {
    /// The tags of the last [`TAG_MEMO_SIZE`] scopes a lease was granted in,
    /// and the slot the next one takes (oldest first out).
    static TAG_MEMO: std::cell::RefCell<(Vec<(String, String)>, usize)> =
        const { std::cell::RefCell::new((Vec::new(), 0)) };
}

/// [`scope_tag`], remembered for the last few scopes (the hash is a visible part
/// of an acquisition's CPU time: docs/decisions/issuer-step.md). A
/// cache of a pure function, nothing an operation depends on: an entry is
/// the scope's tag whether it is found or computed again.
fn memo_scope_tag(scope: &str, out: &mut String) {
    TAG_MEMO.with(|memo| {
        let mut memo = memo.borrow_mut();
        let (entries, next) = &mut *memo;
        if let Some((_, tag)) = entries.iter().find(|(s, _)| s == scope) {
            out.push_str(tag);
            return;
        }
        let tag = scope_tag(scope);
        out.push_str(&tag);
        if entries.len() < TAG_MEMO_SIZE {
            entries.push((scope.to_owned(), tag));
        } else {
            entries[*next] = (scope.to_owned(), tag);
            *next = (*next + 1) % TAG_MEMO_SIZE;
        }
    });
}

/// A lease id of format 2: `"<epoch>.<tag><key>"` — the scope tag (8
/// characters) and the unpadded base64url text of the 16 random bytes (22).
pub fn keyed_lease_id(scope: &str, epoch: u64, random: &[u8; LEASE_KEY_BYTES]) -> String {
    let mut id = String::with_capacity(MAX_LEASE_ID_LEN);
    let mut digits = [0u8; 20];
    id.push_str(crate::format::decimal_str(epoch, &mut digits));
    id.push('.');
    memo_scope_tag(scope, &mut id);
    b64_encode(random, &mut id);
    id
}

/// The epoch and scope tag of a well-formed format-2 lease id.
fn keyed_parts(id: &str) -> Option<(u64, &str)> {
    let (e, rest) = id.split_once('.')?;
    if rest.len() != SCOPE_TAG_LEN + LEASE_KEY_LEN || !rest.is_ascii() {
        return None;
    }
    // The tag's 8 characters are two whole base64 groups, so the tag and the
    // key are canonical each exactly when their concatenation is (one decode).
    const _: () = assert!(SCOPE_TAG_LEN % 4 == 0 && SCOPE_TAG_LEN / 4 * 3 == SCOPE_TAG_BYTES);
    if b64_decode_canonical(rest.as_bytes())?.len() != SCOPE_TAG_BYTES + LEASE_KEY_BYTES {
        return None;
    }
    let (tag, _key) = rest.split_at_checked(SCOPE_TAG_LEN)?;
    Some((parse_token(e).ok()?, tag))
}

/// The epoch named by a well-formed lease id of `scope`, in either form, when
/// it is one that `wanted` accepts; `None` otherwise. The scope tag of a
/// format-2 id (a hash of the scope) is checked only for an epoch `wanted`
/// accepts: the common answers (an id of the current epoch) need no hash.
fn named_epoch_where(scope: &str, id: &str, wanted: impl Fn(u64) -> bool) -> Option<u64> {
    if let Some((e, tag)) = keyed_parts(id) {
        return (wanted(e) && tag == scope_tag(scope)).then_some(e);
    }
    let (s, e) = id.rsplit_once('#')?;
    if s != scope {
        return None;
    }
    parse_token(e).ok().filter(|e| wanted(*e))
}

/// Equality of two texts that takes the same time wherever they differ
/// (their lengths are not secret: every lease id of one form has one length).
fn same_text(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// Why a transition could not be computed. Nothing changes on any of these.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum IssuerError {
    /// An argument is outside its domain (an empty holder, `ttl_ms` 0, a time
    /// that is not a safe integer, `now + ttl` beyond 2^53−1). Code `INVALID_ARGUMENT`.
    #[error("{0}")]
    InvalidArgument(String),
    /// The scope's epoch is already the largest allowed: the next one would
    /// wrap or be rounded. Code `EPOCH_OVERFLOW`.
    #[error("scope epoch {epoch} is the largest issuable epoch ({limit}); no further epoch can be issued")]
    EpochOverflow {
        /// The scope's current epoch.
        epoch: u64,
        /// The limit in force.
        limit: u64,
    },
    /// `raise` to an epoch above the issuer's limit: the issuer could never
    /// issue past it (a `'number'` issuer above 2^53−1 would refuse every
    /// acquisition for good). Code `EPOCH_OVERFLOW`; nothing changes.
    #[error("cannot raise to {at_least}: above the largest epoch this issuer can issue ({limit}); nothing changed")]
    RaiseOverflow {
        /// The floor asked for.
        at_least: u64,
        /// The limit in force.
        limit: u64,
    },
    /// The stored state is behind a lease id it issued (an issuer restored from
    /// an old backup, R11) or could not be decoded. Code `CORRUPT_STATE`.
    #[error(transparent)]
    Corrupt(#[from] StateError),
}

impl IssuerError {
    /// The stable code of this error.
    pub fn code(&self) -> Code {
        match self {
            IssuerError::InvalidArgument(_) => Code::InvalidArgument,
            IssuerError::EpochOverflow { .. } | IssuerError::RaiseOverflow { .. } => {
                Code::EpochOverflow
            }
            IssuerError::Corrupt(_) => Code::CorruptState,
        }
    }
}

fn invalid(message: impl Into<String>) -> IssuerError {
    IssuerError::InvalidArgument(message.into())
}

/// Validates host-supplied milliseconds (a JS number): a safe integer ≥ 0.
pub fn ms_from_f64(name: &str, value: f64) -> Result<u64, IssuerError> {
    if !value.is_finite() || value.fract() != 0.0 || value < 0.0 || value > MAX_SAFE_INTEGER as f64
    {
        // The value is not printed: formatting an f64 would pull float printing into the Wasm.
        return Err(invalid(format!(
            "{name} must be a safe integer number of milliseconds ≥ 0 (at most 2^53−1)"
        )));
    }
    Ok(value as u64)
}

/// `now + ttl` after checking `ttl ≥ 1` and that the sum stays ≤ 2^53−1.
fn expiry(now_ms: u64, ttl_ms: u64) -> Result<u64, IssuerError> {
    if ttl_ms == 0 {
        return Err(invalid("ttlMs must be at least 1 ms"));
    }
    if now_ms > MAX_SAFE_INTEGER || ttl_ms > MAX_SAFE_INTEGER {
        return Err(invalid("now and ttlMs must be ≤ 2^53−1 ms"));
    }
    now_ms
        .checked_add(ttl_ms)
        .filter(|e| *e <= MAX_SAFE_INTEGER)
        .ok_or_else(|| {
            invalid(format!(
                "now + ttlMs ({now_ms} + {ttl_ms}) exceeds 2^53−1 ms"
            ))
        })
}

fn non_empty(name: &str, value: &str) -> Result<(), IssuerError> {
    if value.is_empty() {
        Err(invalid(format!("{name} must be a non-empty string")))
    } else {
        Ok(())
    }
}

/// A granted (or replayed) lease.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grant {
    /// The epoch (fencing token) of this lease.
    pub epoch: u64,
    /// Its lease id (see the module docs).
    pub lease_id: String,
    /// Its holder.
    pub holder: String,
    /// Expiry in host ms.
    pub expires_at: u64,
    /// The acquiring request's id.
    pub request_id: Option<String>,
    /// `true` when this is the answer to a retried request id (nothing changed).
    pub replayed: bool,
}

/// The answer of one transition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IssuerResult {
    /// `acquire` granted a lease with a new epoch (or replayed the same one).
    Granted(Grant),
    /// `acquire`: another live lease holds the scope (code `LEASE_HELD`).
    Held {
        /// The scope's current epoch (the live lease's).
        epoch: u64,
        /// Its holder.
        holder: String,
        /// Its expiry in host ms.
        expires_at: u64,
    },
    /// `renew` extended the lease; its epoch is unchanged.
    Renewed(Grant),
    /// `renew` of a lease that expired, was released or was superseded, or an
    /// `acquire` retried with a request id whose lease has expired (code `LEASE_EXPIRED`).
    Expired {
        /// The scope's current epoch.
        epoch: u64,
    },
    /// `renew` or `release` with a lease id and holder that do not both match
    /// the scope's current lease, while the id does not name an epoch whose
    /// lease is over anyway (code `LEASE_NOT_HELD`). Carries nothing about
    /// the lease: not its holder, id or expiry.
    NotHeld,
    /// `acquire` with the request id of the current lease but other arguments
    /// (another holder, another ttl): the id was reused for a different
    /// request (code `REQUEST_ID_REUSED`). Carries nothing about the lease.
    RequestIdReused,
    /// `release`: `released` is true when the lease was the scope's current
    /// one and is now freed; false when its lease was over already (nothing changed).
    Released {
        /// Whether anything was freed.
        released: bool,
        /// The scope's current epoch.
        epoch: u64,
    },
    /// `raise`: the epoch before and after (equal when nothing changed).
    Raised {
        /// Epoch before.
        before: u64,
        /// Epoch after.
        after: u64,
        /// `true` when a live lease was revoked ([`raise_revoking`]).
        revoked: bool,
    },
}

impl IssuerResult {
    /// The code of an unsuccessful result (`LEASE_HELD`, `LEASE_EXPIRED`,
    /// `LEASE_NOT_HELD`, `REQUEST_ID_REUSED`), `None` otherwise.
    pub fn code(&self) -> Option<Code> {
        match self {
            IssuerResult::Held { .. } => Some(Code::LeaseHeld),
            IssuerResult::Expired { .. } => Some(Code::LeaseExpired),
            IssuerResult::NotHeld => Some(Code::LeaseNotHeld),
            IssuerResult::RequestIdReused => Some(Code::RequestIdReused),
            _ => None,
        }
    }
}

/// Serializes an epoch (or host ms) the way the package hands epochs to JS: a
/// number up to 2^53−1, a bigint above (serde-wasm-bindgen turns a `u128` into
/// a `BigInt`; serde_json writes both as numbers).
pub fn serialize_epoch<S: Serializer>(epoch: &u64, s: S) -> Result<S::Ok, S::Error> {
    if *epoch <= MAX_SAFE_INTEGER {
        s.serialize_u64(*epoch)
    } else {
        s.serialize_u128(u128::from(*epoch))
    }
}

/// An [`IssuerResult`] of `scope` in the shape the JS `Issuer` resolves to
/// (`pkg/index.d.ts`: `IssuerGrant`, `LeaseHeld`, `LeaseExpired`,
/// `LeaseNotHeld`, `RequestIdReused`, `IssuerReleased`, `IssuerRaised`):
/// `{ ok, code, scope, … }`, `ok` and `code` from [`IssuerResult::code`].
pub struct ScopedResult<'a> {
    /// The scope.
    pub scope: &'a str,
    /// The answer.
    pub result: &'a IssuerResult,
}

/// An epoch field of a serialized result.
struct E(u64);

impl Serialize for E {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        serialize_epoch(&self.0, s)
    }
}

impl Serialize for ScopedResult<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let code = self.result.code();
        let mut out = s.serialize_struct("IssuerResult", 9)?;
        out.serialize_field("ok", &code.is_none())?;
        out.serialize_field("code", &code.map(Code::as_str))?;
        out.serialize_field("scope", self.scope)?;
        match self.result {
            IssuerResult::Granted(g) | IssuerResult::Renewed(g) => {
                out.serialize_field("epoch", &E(g.epoch))?;
                out.serialize_field("leaseId", &g.lease_id)?;
                out.serialize_field("holder", &g.holder)?;
                out.serialize_field("expiresAt", &E(g.expires_at))?;
                out.serialize_field("requestId", &g.request_id)?;
                if matches!(self.result, IssuerResult::Granted(_)) {
                    out.serialize_field("replayed", &g.replayed)?;
                }
            }
            IssuerResult::Held {
                epoch,
                holder,
                expires_at,
            } => {
                out.serialize_field("epoch", &E(*epoch))?;
                out.serialize_field("holder", holder)?;
                out.serialize_field("expiresAt", &E(*expires_at))?;
            }
            IssuerResult::Expired { epoch } => out.serialize_field("epoch", &E(*epoch))?,
            // Nothing about the lease: not its holder, id, epoch or expiry.
            IssuerResult::NotHeld | IssuerResult::RequestIdReused => {}
            IssuerResult::Released { released, epoch } => {
                out.serialize_field("released", released)?;
                out.serialize_field("epoch", &E(*epoch))?;
            }
            IssuerResult::Raised {
                before,
                after,
                revoked,
            } => {
                out.serialize_field("epochBefore", &E(*before))?;
                out.serialize_field("epoch", &E(*after))?;
                out.serialize_field("revoked", revoked)?;
            }
        }
        out.end()
    }
}

/// A result and the state to commit before the result is given to anyone
/// (`None`: nothing changes, write nothing).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// The answer.
    pub result: IssuerResult,
    /// The next state to persist, or `None`.
    pub next: Option<IssuerState>,
}

fn unchanged(result: IssuerResult) -> Step {
    Step { result, next: None }
}

/// The arguments of [`acquire`].
#[derive(Clone, Copy, Debug)]
pub struct AcquireRequest<'a> {
    /// What the token is for (non-empty).
    pub scope: &'a str,
    /// Who asks (non-empty).
    pub holder: &'a str,
    /// Lease length in ms (≥ 1).
    pub ttl_ms: u64,
    /// The host's current time in ms.
    pub now_ms: u64,
    /// An id that makes retries idempotent (non-empty when given).
    pub request_id: Option<&'a str>,
    /// The largest epoch that may be issued.
    pub limit: EpochLimit,
    /// 16 bytes from the host's CSPRNG: the key of the lease id when a lease
    /// is granted (unused otherwise). Draw fresh bytes for every call.
    pub random: [u8; LEASE_KEY_BYTES],
}

/// Acquire: grants a lease and the epoch `state.epoch + 1` when the scope has
/// no live lease (never acquired, released, or expired: `now ≥ expiresAt`).
///
/// * The current lease was granted for this `request_id`:
///   - to another holder, or (format 2) with another `ttl_ms` →
///     [`IssuerResult::RequestIdReused`] (`REQUEST_ID_REUSED`), live or not;
///   - to this holder with this ttl → the same lease again with
///     `replayed: true` and no change while it is live;
///     [`IssuerResult::Expired`] (`LEASE_EXPIRED`) once it has expired
///     (acquire with a new request id).
/// * A live lease → [`IssuerResult::Held`] (`LEASE_HELD`), even for the same
///   holder: a holder gets a new epoch only after its lease ends.
/// * `state.epoch` is already `limit.max()` → [`IssuerError::EpochOverflow`].
///
/// A grant's lease id is `"<epoch>.<base64url(req.random)>"` and is stored
/// with the lease (format 2).
pub fn acquire(state: &IssuerState, req: &AcquireRequest<'_>) -> Result<Step, IssuerError> {
    non_empty("scope", req.scope)?;
    non_empty("holder", req.holder)?;
    if let Some(r) = req.request_id {
        non_empty("requestId", r)?;
    }
    let expires_at = expiry(req.now_ms, req.ttl_ms)?;
    if let Some(lease) = &state.lease {
        if req.request_id.is_some() && lease.request_id.as_deref() == req.request_id {
            // A format-1 lease recorded no ttl: only the holder can be compared.
            if lease.holder != req.holder || lease.ttl_ms().is_some_and(|t| t != req.ttl_ms) {
                return Ok(unchanged(IssuerResult::RequestIdReused));
            }
            let live = req.now_ms < lease.expires_at;
            return Ok(unchanged(if live {
                IssuerResult::Granted(Grant {
                    epoch: state.epoch,
                    lease_id: lease.id(req.scope, state.epoch),
                    holder: lease.holder.clone(),
                    expires_at: lease.expires_at,
                    request_id: lease.request_id.clone(),
                    replayed: true,
                })
            } else {
                IssuerResult::Expired { epoch: state.epoch }
            }));
        }
        if req.now_ms < lease.expires_at {
            return Ok(unchanged(IssuerResult::Held {
                epoch: state.epoch,
                holder: lease.holder.clone(),
                expires_at: lease.expires_at,
            }));
        }
    }
    let limit = req.limit.max();
    let epoch =
        state
            .epoch
            .checked_add(1)
            .filter(|e| *e <= limit)
            .ok_or(IssuerError::EpochOverflow {
                epoch: state.epoch,
                limit,
            })?;
    let id = keyed_lease_id(req.scope, epoch, &req.random);
    let lease = Lease {
        holder: req.holder.to_owned(),
        expires_at,
        request_id: req.request_id.map(str::to_owned),
        form: LeaseForm::Keyed {
            id: id.clone(),
            ttl_ms: req.ttl_ms,
        },
    };
    let grant = Grant {
        epoch,
        lease_id: id,
        holder: lease.holder.clone(),
        expires_at,
        request_id: lease.request_id.clone(),
        replayed: false,
    };
    Ok(Step {
        result: IssuerResult::Granted(grant),
        next: Some(IssuerState {
            epoch,
            lease: Some(lease),
        }),
    })
}

/// When `id` names an epoch above the stored one, the stored state is older
/// than a lease it handed out: restored from a backup (R11).
fn check_not_behind(state: &IssuerState, scope: &str, id: &str) -> Result<(), IssuerError> {
    match named_epoch_where(scope, id, |e| e > state.epoch) {
        Some(e) => Err(IssuerError::Corrupt(StateError(format!(
            "lease {} names epoch {e} but the issuer state of {} is at epoch {}: \
             the issuer state was restored from an older copy; raise() it above every epoch \
             a resource has seen before issuing again",
            quoted(id),
            quoted(scope),
            state.epoch
        )))),
        _ => Ok(()),
    }
}

/// What a presented lease id and holder are, against the stored state.
enum Presented<'s> {
    /// Both match the scope's current lease exactly.
    Current(&'s Lease),
    /// The id names an epoch whose lease is over, whoever held it: an older
    /// epoch, or the current one once its lease was released or revoked.
    Ended,
    /// Anything else: another lease id or another holder than the current
    /// lease's, or not a lease id of this scope.
    NotHeld,
}

fn presented<'s>(state: &'s IssuerState, scope: &str, id: &str, holder: &str) -> Presented<'s> {
    if let Some(lease) = &state.lease {
        let current = match &lease.form {
            LeaseForm::Keyed { id: stored, .. } => same_text(stored, id),
            LeaseForm::Derived => same_text(&derived_lease_id(scope, state.epoch), id),
        };
        if current && lease.holder == holder {
            return Presented::Current(lease);
        }
    }
    let over = |e: u64| e < state.epoch || (e == state.epoch && state.lease.is_none());
    match named_epoch_where(scope, id, over) {
        Some(_) => Presented::Ended,
        None => Presented::NotHeld,
    }
}

/// [`presented`], after [`check_not_behind`]. The current lease's own id
/// names the stored epoch (`IssuerState::from_wire` holds it to that), so
/// only another id can name one above it: the check is made for those alone.
fn presented_checked<'s>(
    state: &'s IssuerState,
    scope: &str,
    id: &str,
    holder: &str,
) -> Result<Presented<'s>, IssuerError> {
    let p = presented(state, scope, id, holder);
    if !matches!(p, Presented::Current(_)) {
        check_not_behind(state, scope, id)?;
    }
    Ok(p)
}

/// Renew: when `lease_id` and `holder` are the scope's current lease and it
/// is live at `now`, its expiry becomes `now + ttl` and its epoch stays.
///
/// * The current lease, but expired; or an id naming an epoch whose lease is
///   over (released, revoked, superseded) → [`IssuerResult::Expired`]: an
///   expired lease cannot be renewed back into validity.
/// * Another id or another holder than the current lease's →
///   [`IssuerResult::NotHeld`].
/// * An id naming an epoch above the stored one → `CORRUPT_STATE` (restored).
///
/// Nothing changes on any of these.
pub fn renew(
    state: &IssuerState,
    scope: &str,
    lease_id: &str,
    holder: &str,
    ttl_ms: u64,
    now_ms: u64,
) -> Result<Step, IssuerError> {
    non_empty("scope", scope)?;
    non_empty("holder", holder)?;
    let expires_at = expiry(now_ms, ttl_ms)?;
    let lease = match presented_checked(state, scope, lease_id, holder)? {
        Presented::Current(lease) if now_ms < lease.expires_at => lease,
        Presented::Current(_) | Presented::Ended => {
            return Ok(unchanged(IssuerResult::Expired { epoch: state.epoch }))
        }
        Presented::NotHeld => return Ok(unchanged(IssuerResult::NotHeld)),
    };
    let grant = Grant {
        epoch: state.epoch,
        lease_id: lease_id.to_owned(),
        holder: lease.holder.clone(),
        expires_at,
        request_id: lease.request_id.clone(),
        replayed: false,
    };
    let next = (expires_at != lease.expires_at).then(|| IssuerState {
        epoch: state.epoch,
        lease: Some(Lease {
            expires_at,
            ..lease.clone()
        }),
    });
    Ok(Step {
        result: IssuerResult::Renewed(grant),
        next,
    })
}

/// Release: frees the scope when `lease_id` and `holder` are its current
/// lease (the lease record becomes `null`, the epoch stays). An expired lease
/// that nobody has superseded is still cleared: the scope was free already,
/// so only the stored record changes.
///
/// * An id naming an epoch whose lease is over (released, revoked,
///   superseded) → `released: false`, nothing changes.
/// * Another id or another holder than the current lease's →
///   [`IssuerResult::NotHeld`], nothing changes.
pub fn release(
    state: &IssuerState,
    scope: &str,
    lease_id: &str,
    holder: &str,
) -> Result<Step, IssuerError> {
    non_empty("scope", scope)?;
    non_empty("holder", holder)?;
    match presented_checked(state, scope, lease_id, holder)? {
        Presented::Current(_) => Ok(Step {
            result: IssuerResult::Released {
                released: true,
                epoch: state.epoch,
            },
            next: Some(IssuerState {
                epoch: state.epoch,
                lease: None,
            }),
        }),
        Presented::Ended => Ok(unchanged(IssuerResult::Released {
            released: false,
            epoch: state.epoch,
        })),
        Presented::NotHeld => Ok(unchanged(IssuerResult::NotHeld)),
    }
}

/// `at_least` when a raise to it stays within `limit`; else
/// [`IssuerError::RaiseOverflow`] (`raise` and `raise_revoking` themselves
/// take any u64: the caller checks the floor against its issuer's limit first).
pub fn raise_floor(at_least: u64, limit: EpochLimit) -> Result<u64, IssuerError> {
    if at_least > limit.max() {
        return Err(IssuerError::RaiseOverflow {
            at_least,
            limit: limit.max(),
        });
    }
    Ok(at_least)
}

/// Raise (repair after a restore, R11): lifts the scope's epoch to at least
/// `at_least` so the next acquisition issues `at_least + 1` or more. Use it
/// with the largest mark any resource of the scope has accepted after an
/// issuer state was restored from a backup. It refuses with
/// [`IssuerResult::Held`] while a lease is live at `now` (at most one live
/// lease, always); when it raises, the ended lease record is dropped. Lower or
/// equal values change nothing.
pub fn raise(state: &IssuerState, at_least: u64, now_ms: u64) -> Step {
    if at_least <= state.epoch {
        return unchanged(IssuerResult::Raised {
            before: state.epoch,
            after: state.epoch,
            revoked: false,
        });
    }
    if let Some(lease) = state.live_lease(now_ms) {
        return unchanged(IssuerResult::Held {
            epoch: state.epoch,
            holder: lease.holder.clone(),
            expires_at: lease.expires_at,
        });
    }
    Step {
        result: IssuerResult::Raised {
            before: state.epoch,
            after: at_least,
            revoked: false,
        },
        next: Some(IssuerState {
            epoch: at_least,
            lease: None,
        }),
    }
}

/// Raise that also revokes a live lease whose epoch is not above `at_least`
/// (reconcile after a restore, DESIGN R11). Such a lease cannot be a valid
/// ownership: some resource has already accepted `at_least` ≥ its epoch from
/// an owner (a restored issuer handed the epoch out twice, or handed out one
/// that is already stale). The epoch becomes `max(epoch, at_least)` and the
/// lease record is dropped, so the next acquisition issues a larger epoch;
/// the revoked holder's renew answers `LEASE_EXPIRED`. A live lease above
/// `at_least` is left alone (as [`raise`]: `Held` when it would have to be
/// raised over). Never lowers anything; a second call changes nothing.
pub fn raise_revoking(state: &IssuerState, at_least: u64, now_ms: u64) -> Step {
    if state.live_lease(now_ms).is_none() || state.epoch > at_least {
        return raise(state, at_least, now_ms);
    }
    Step {
        result: IssuerResult::Raised {
            before: state.epoch,
            after: at_least,
            revoked: true,
        },
        next: Some(IssuerState {
            epoch: at_least,
            lease: None,
        }),
    }
}

/// The TypeScript declarations of the records this module defines, as
/// `pkg/index.d.ts` publishes them (docs/decisions/generated-types.md):
/// `src/typescript.rs` renders each one there; tests/js/api/types-sync.test.mjs
/// compares their members with what the built package answers.
pub(crate) const TYPESCRIPT: &[(&str, &str)] = &[
    (
        "IssuerGrant",
        r##"/** A lease as granted, replayed or renewed. Times are host milliseconds. */
export interface IssuerGrant {
  ok: true;
  code: null;
  scope: string;
  /** The fencing token of this lease: send it with every write (gate.write / establish). */
  epoch: Epoch;
  /**
   * `"<epoch>.<22 base64url characters>"` (at most 43 characters, URL- and
   * header-safe): 128 random bits from the host's CSPRNG, unique per
   * acquisition even when a restored issuer repeats an epoch. With `holder`
   * it is what renew and release check. (`"<scope>#<epoch>"` for a lease
   * granted before random lease ids, state format 1.)
   */
  leaseId: string;
  holder: string;
  /** The lease is live while `now < expiresAt` (ms). */
  expiresAt: number;
  requestId: string | null;
}"##,
    ),
    (
        "LeaseHeld",
        r##"/** `acquire` when the scope is held by a live lease (any holder, including the caller). */
export interface LeaseHeld {
  ok: false;
  code: 'LEASE_HELD';
  scope: string;
  /** The live lease's epoch. */
  epoch: Epoch;
  holder: string;
  /** When the live lease ends (ms); retry at or after it. */
  expiresAt: number;
}"##,
    ),
    (
        "LeaseExpired",
        r##"/** `renew` of a lease that expired, was released or superseded; or an acquire retried with a request id whose lease expired. */
export interface LeaseExpired {
  ok: false;
  code: 'LEASE_EXPIRED';
  scope: string;
  /** The scope's current epoch. */
  epoch: Epoch;
}"##,
    ),
    (
        "LeaseNotHeld",
        r##"/**
 * `renew` / `release` whose lease id and holder are not both the scope's
 * current lease. Says nothing about that lease (no holder, id, epoch or
 * expiry). Nothing changed.
 */
export interface LeaseNotHeld {
  ok: false;
  code: 'LEASE_NOT_HELD';
  scope: string;
}"##,
    ),
    (
        "RequestIdReused",
        r##"/**
 * `acquire` with the request id of the scope's current lease but another
 * holder or another ttlMs: the id was reused for a different request.
 * Nothing changed; use a new request id per acquisition attempt.
 */
export interface RequestIdReused {
  ok: false;
  code: 'REQUEST_ID_REUSED';
  scope: string;
}"##,
    ),
    (
        "IssuerReleased",
        r##"/** What {@link Issuer.release} did (`released: false`: that lease was over already, nothing changed). */
export interface IssuerReleased {
  ok: true;
  code: null;
  scope: string;
  released: boolean;
  /** The scope's current epoch. */
  epoch: Epoch;
}"##,
    ),
    (
        "IssuerRaised",
        r##"/** What {@link Issuer.raise} did (`epochBefore === epoch` and `revoked: false`: nothing changed). */
export interface IssuerRaised {
  ok: true;
  code: null;
  scope: string;
  epochBefore: Epoch;
  epoch: Epoch;
  revoked: boolean;
}"##,
    ),
    (
        "IssuerLeaseRecord",
        r##"/** A lease as stored (see {@link IssuerRecord}). */
export interface IssuerLeaseRecord {
  leaseId: string;
  holder: string;
  /** Live while `now < expiresAt` (ms). */
  expiresAt: number;
  requestId: string | null;
}"##,
    ),
    (
        "IssuerRecord",
        r##"/** A scope's issuer record as {@link Issuer.current} reads it: epoch 0 and `lease: null` for a scope never acquired. */
export interface IssuerRecord {
  scope: string;
  epoch: Epoch;
  lease: IssuerLeaseRecord | null;
}"##,
    ),
];

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::{HashMap, HashSet};

    #[test]
    fn raise_floor_refuses_above_the_issuers_limit() {
        assert_eq!(
            raise_floor(MAX_SAFE_INTEGER, EpochLimit::Number),
            Ok(MAX_SAFE_INTEGER)
        );
        let e = raise_floor(MAX_SAFE_INTEGER + 1, EpochLimit::Number).unwrap_err();
        assert_eq!(
            e,
            IssuerError::RaiseOverflow {
                at_least: 1 << 53,
                limit: MAX_SAFE_INTEGER
            }
        );
        assert_eq!(e.code(), Code::EpochOverflow);
        assert_eq!(
            e.to_string(),
            "cannot raise to 9007199254740992: above the largest epoch this issuer can issue \
             (9007199254740991); nothing changed"
        );
        assert_eq!(raise_floor(u64::MAX, EpochLimit::BigInt), Ok(u64::MAX));
        assert_eq!(raise_floor(1 << 53, EpochLimit::BigInt), Ok(1 << 53));
    }
    use std::sync::atomic::{AtomicU64, Ordering};

    const T0: u64 = 1_700_000_000_000;

    /// Distinct random bytes per call (a stand-in for the host's CSPRNG).
    fn fresh_random() -> [u8; LEASE_KEY_BYTES] {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let mut out = [0xA5; LEASE_KEY_BYTES];
        out[..8].copy_from_slice(&n.to_le_bytes());
        out
    }

    fn req<'a>(holder: &'a str, ttl: u64, now: u64, rid: Option<&'a str>) -> AcquireRequest<'a> {
        AcquireRequest {
            scope: "s",
            holder,
            ttl_ms: ttl,
            now_ms: now,
            request_id: rid,
            limit: EpochLimit::Number,
            random: fresh_random(),
        }
    }

    /// A format-1 lease (derived id), as issuers before random lease ids stored it.
    fn v1_lease(holder: &str, expires_at: u64, request_id: Option<&str>) -> Lease {
        Lease {
            holder: holder.into(),
            expires_at,
            request_id: request_id.map(str::to_owned),
            form: LeaseForm::Derived,
        }
    }

    /// Applies a step like a host would: commit `next` when present.
    fn commit(state: &mut IssuerState, step: Step) -> IssuerResult {
        if let Some(next) = step.next {
            *state = next;
        }
        step.result
    }

    /// Computes a step on the current state and commits it.
    fn run(
        state: &mut IssuerState,
        f: impl FnOnce(&IssuerState) -> Result<Step, IssuerError>,
    ) -> IssuerResult {
        let step = f(state).unwrap();
        commit(state, step)
    }

    fn granted(r: &IssuerResult) -> &Grant {
        match r {
            IssuerResult::Granted(g) => g,
            other => panic!("expected a grant, got {other:?}"),
        }
    }

    fn encode(s: &IssuerState) -> String {
        s.to_json()
    }

    fn decode(text: &str) -> Result<IssuerState, StateError> {
        IssuerState::from_json(text)
    }

    #[test]
    fn wire_format_is_exact_and_strict() {
        let key = [0xAB; LEASE_KEY_BYTES];
        let s = IssuerState {
            epoch: 41,
            lease: Some(Lease {
                holder: "node-a".into(),
                expires_at: T0 + 30_000,
                request_id: Some("r-17".into()),
                form: LeaseForm::Keyed {
                    id: keyed_lease_id("orders", 41, &key),
                    ttl_ms: 30_000,
                },
            }),
        };
        // The tag of "orders" is base64url(SHA-256("orders")[..6]); then the 16 key bytes.
        assert_eq!(
            keyed_lease_id("orders", 41, &key),
            "41.HBaK2wDSq6urq6urq6urq6urq6urqw"
        );
        assert_eq!(
            encode(&s),
            r#"{"v":2,"epoch":"41","lease":{"id":"41.HBaK2wDSq6urq6urq6urq6urq6urqw","holder":"node-a","expiresAt":"1700000030000","ttlMs":"30000","requestId":"r-17"}}"#
        );
        assert_eq!(decode(&encode(&s)), Ok(s));
        // Format 1 is still read, and a state holding a format-1 lease is written in format 1.
        let v1 = r#"{"v":1,"epoch":"41","lease":{"holder":"node-a","expiresAt":"1700000030000","requestId":"r-17"}}"#;
        let old = IssuerState {
            epoch: 41,
            lease: Some(v1_lease("node-a", T0 + 30_000, Some("r-17"))),
        };
        assert_eq!(decode(v1), Ok(old.clone()));
        assert_eq!(encode(&old), v1);
        assert_eq!(old.lease_id("orders"), Some("orders#41".to_owned()));
        // Without a lease both formats decode to the same state, written as format 2.
        let free = IssuerState {
            epoch: 41,
            lease: None,
        };
        assert_eq!(
            decode(r#"{"v":1,"epoch":"41","lease":null}"#),
            Ok(free.clone())
        );
        assert_eq!(encode(&free), r#"{"v":2,"epoch":"41","lease":null}"#);
        let big = IssuerState {
            epoch: u64::MAX,
            lease: None,
        };
        assert_eq!(
            encode(&big),
            r#"{"v":2,"epoch":"18446744073709551615","lease":null}"#
        );
        assert_eq!(decode(&encode(&big)), Ok(big));
        // The longest lease id: the largest epoch, 51 bytes.
        assert_eq!(
            keyed_lease_id("orders", u64::MAX, &key).len(),
            MAX_LEASE_ID_LEN
        );
        // Any valid JSON text of the same shape decodes: key order and whitespace are free.
        assert_eq!(
            decode(" { \"lease\" : null , \"epoch\" : \"3\" , \"v\" : 2 } "),
            Ok(IssuerState {
                epoch: 3,
                lease: None
            })
        );
        assert_eq!(
            decode(
                r#"{"lease":{"requestId":null,"ttlMs":"5","expiresAt":"9","holder":"a","id":"2.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"},"epoch":"2","v":2}"#
            ),
            Ok(IssuerState {
                epoch: 2,
                lease: Some(Lease {
                    holder: "a".into(),
                    expires_at: 9,
                    request_id: None,
                    form: LeaseForm::Keyed {
                        id: "2.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA".into(),
                        ttl_ms: 5
                    }
                })
            })
        );
        let escaped = IssuerState {
            epoch: 2,
            lease: Some(Lease {
                holder: "a \"quoted\" \\ holder ✓ \u{1F512}".into(),
                expires_at: 9,
                request_id: Some("\n".into()),
                form: LeaseForm::Keyed {
                    id: keyed_lease_id("s", 2, &[0xFF; LEASE_KEY_BYTES]),
                    ttl_ms: 9,
                },
            }),
        };
        assert_eq!(decode(&encode(&escaped)), Ok(escaped));
        for bad in [
            r#"{"v":3,"epoch":"1","lease":null}"#,
            r#"{"v":0,"epoch":"1","lease":null}"#,
            r#"{"v":2,"epoch":1,"lease":null}"#,
            r#"{"v":2,"epoch":"01","lease":null}"#,
            r#"{"v":2,"epoch":"18446744073709551616","lease":null}"#,
            r#"{"v":2,"epoch":"1"}"#,
            r#"{"v":2,"lease":null}"#,
            r#"{"epoch":"1","lease":null}"#,
            r#"{"v":2,"epoch":"1","lease":null,"x":0}"#,
            // format 1 leases: exactly holder, expiresAt, requestId
            r#"{"v":1,"epoch":"0","lease":{"holder":"a","expiresAt":"5","requestId":null}}"#,
            r#"{"v":1,"epoch":"1","lease":{"holder":"","expiresAt":"5","requestId":null}}"#,
            r#"{"v":1,"epoch":"1","lease":{"holder":"a","expiresAt":5,"requestId":null}}"#,
            r#"{"v":1,"epoch":"1","lease":{"holder":"a","expiresAt":"9007199254740992","requestId":null}}"#,
            r#"{"v":1,"epoch":"1","lease":{"holder":"a","expiresAt":"5"}}"#,
            r#"{"v":1,"epoch":"1","lease":{"holder":"a","expiresAt":"5","requestId":""}}"#,
            r#"{"v":1,"epoch":"1","lease":{"holder":"a","expiresAt":"5","requestId":null,"id":"s#1"}}"#,
            r#"{"v":1,"epoch":"1","lease":{"id":"1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA","holder":"a","expiresAt":"5","ttlMs":"5","requestId":null}}"#,
            // format 2 leases: also id (this epoch, 16 canonical base64url bytes) and ttlMs (≥ 1)
            r#"{"v":2,"epoch":"1","lease":{"holder":"a","expiresAt":"5","requestId":null}}"#,
            r#"{"v":2,"epoch":"1","lease":{"id":"1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA","holder":"a","expiresAt":"5","requestId":null}}"#,
            r#"{"v":2,"epoch":"1","lease":{"holder":"a","expiresAt":"5","ttlMs":"5","requestId":null}}"#,
            r#"{"v":2,"epoch":"1","lease":{"id":"2.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA","holder":"a","expiresAt":"5","ttlMs":"5","requestId":null}}"#,
            r#"{"v":2,"epoch":"1","lease":{"id":"1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAB","holder":"a","expiresAt":"5","ttlMs":"5","requestId":null}}"#,
            r#"{"v":2,"epoch":"1","lease":{"id":"1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAA","holder":"a","expiresAt":"5","ttlMs":"5","requestId":null}}"#,
            r#"{"v":2,"epoch":"1","lease":{"id":"1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA","holder":"a","expiresAt":"5","ttlMs":"5","requestId":null}}"#,
            r#"{"v":2,"epoch":"1","lease":{"id":"1.AAAAAAAAAAAAAAAAAAAAAAAAAAAA+A","holder":"a","expiresAt":"5","ttlMs":"5","requestId":null}}"#,
            r#"{"v":2,"epoch":"1","lease":{"id":"01.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA","holder":"a","expiresAt":"5","ttlMs":"5","requestId":null}}"#,
            r#"{"v":2,"epoch":"1","lease":{"id":"s#1","holder":"a","expiresAt":"5","ttlMs":"5","requestId":null}}"#,
            r#"{"v":2,"epoch":"1","lease":{"id":1,"holder":"a","expiresAt":"5","ttlMs":"5","requestId":null}}"#,
            r#"{"v":2,"epoch":"1","lease":{"id":"1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA","holder":"a","expiresAt":"5","ttlMs":"0","requestId":null}}"#,
            r#"{"v":2,"epoch":"1","lease":{"id":"1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA","holder":"a","expiresAt":"5","ttlMs":"9007199254740992","requestId":null}}"#,
            r#"{"v":2,"epoch":"1","lease":{"id":"1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA","holder":"a","expiresAt":"5","ttlMs":5,"requestId":null}}"#,
            r#"{"v":2,"epoch":"1","lease":{"id":"1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA","holder":"a","expiresAt":"5","ttlMs":"5","requestId":null,"x":1}}"#,
            r#"{"v":2,"epoch":"1","lease":{"id":"1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA","id":"1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA","holder":"a","expiresAt":"5","ttlMs":"5","requestId":null}}"#,
            r#"{"v":2,"epoch":"1","lease":[]}"#,
            r#"{"v":2,"epoch":"1","epoch":"2","lease":null}"#,
            r#"{"v":1,"epoch":"1","lease":{"holder":"a","holder":"b","expiresAt":"5","requestId":null}}"#,
            r#"{"v":1.5,"epoch":"1","lease":null}"#,
            r#"{"v":2,"epoch":"1","lease":null} x"#,
            r#""#,
            r#"[]"#,
            r#"null"#,
        ] {
            assert!(decode(bad).is_err(), "{bad}");
        }
    }

    /// L1 acquires 33, lapses; L2 acquires 34 (the gate then rejects 33).
    #[test]
    fn lapsed_lease_is_superseded_by_a_higher_epoch() {
        let mut s = IssuerState {
            epoch: 32,
            lease: None,
        };
        let a = granted(&run(&mut s, |s| acquire(s, &req("L1", 1000, T0, None)))).clone();
        assert_eq!((a.epoch, a.expires_at), (33, T0 + 1000));
        assert!(a.lease_id.starts_with("33.BDpxh3TF") && a.lease_id.len() == 33);
        // Still live one ms before expiry: held, nothing changes.
        let before = encode(&s);
        let held = acquire(&s, &req("L2", 1000, T0 + 999, None)).unwrap();
        assert_eq!(
            held,
            Step {
                result: IssuerResult::Held {
                    epoch: 33,
                    holder: "L1".into(),
                    expires_at: T0 + 1000
                },
                next: None
            }
        );
        assert_eq!(encode(&s), before);
        // At now == expiresAt the lease is over.
        let b = granted(&run(&mut s, |s| {
            acquire(s, &req("L2", 1000, T0 + 1000, None))
        }))
        .clone();
        assert_eq!(b.epoch, 34);
        // L1 cannot renew its old lease back into validity, nor release L2's.
        let r = renew(&s, "s", &a.lease_id, "L1", 1000, T0 + 1001).unwrap();
        assert_eq!(r, unchanged(IssuerResult::Expired { epoch: 34 }));
        let r = release(&s, "s", &a.lease_id, "L1").unwrap();
        assert_eq!(
            r,
            unchanged(IssuerResult::Released {
                released: false,
                epoch: 34
            })
        );
        // L1's next acquisition waits for L2, then gets a higher epoch.
        assert!(matches!(
            acquire(&s, &req("L1", 1000, T0 + 1500, None))
                .unwrap()
                .result,
            IssuerResult::Held { epoch: 34, .. }
        ));
        assert_eq!(
            run(&mut s, |s| release(s, "s", &b.lease_id, "L2")),
            IssuerResult::Released {
                released: true,
                epoch: 34
            }
        );
        assert_eq!(s.lease, None);
        let c = granted(&run(&mut s, |s| {
            acquire(s, &req("L1", 1000, T0 + 1501, None))
        }))
        .clone();
        assert_eq!(c.epoch, 35);
    }

    #[test]
    fn renew_keeps_the_epoch_and_needs_a_live_lease() {
        let mut s = IssuerState::default();
        let a = granted(&run(&mut s, |s| acquire(s, &req("A", 100, 0, None)))).clone();
        assert_eq!(a.epoch, 1);
        let r = run(&mut s, |s| renew(s, "s", &a.lease_id, "A", 100, 99));
        assert!(matches!(
            r,
            IssuerResult::Renewed(Grant {
                epoch: 1,
                expires_at: 199,
                ..
            })
        ));
        assert_eq!(s.lease.as_ref().unwrap().expires_at, 199);
        // Same expiry again: a success that writes nothing.
        assert_eq!(
            renew(&s, "s", &a.lease_id, "A", 100, 99).unwrap().next,
            None
        );
        // Wrong scope, a derived or made-up id, another holder: not this lease.
        for (scope, id, holder) in [
            ("t", "s#1", "A"),
            ("s", "s#1", "A"),
            ("s", "whatever", "A"),
            ("s", "1.BDpxh3TFAAAAAAAAAAAAAAAAAAAAAA", "A"),
            ("s", a.lease_id.as_str(), "B"),
        ] {
            assert_eq!(
                renew(&s, scope, id, holder, 100, 150).unwrap(),
                unchanged(IssuerResult::NotHeld),
                "{scope} {id} {holder}"
            );
        }
        assert_eq!(
            renew(&s, "s", &a.lease_id, "A", 100, 199).unwrap(),
            unchanged(IssuerResult::Expired { epoch: 1 })
        );
        // Once expired, another holder is still told nothing but LEASE_NOT_HELD.
        assert_eq!(
            renew(&s, "s", &a.lease_id, "B", 100, 199).unwrap(),
            unchanged(IssuerResult::NotHeld)
        );
    }

    /// "Issued 1, 2, 3, then the store throws after committing 4 and
    /// the reply is lost: a retry with the same request id returns 4; a
    /// different holder's acquire after expiry returns 5."
    #[test]
    fn request_id_makes_acquire_idempotent() {
        let mut s = IssuerState {
            epoch: 3,
            lease: None,
        };
        let step = acquire(&s, &req("A", 1000, T0, Some("r1"))).unwrap();
        commit(&mut s, step); // committed; the reply is lost
        let stored = encode(&s);
        let retry = acquire(&s, &req("A", 1000, T0 + 10, Some("r1"))).unwrap();
        assert_eq!(retry.next, None);
        let g = granted(&retry.result);
        assert_eq!((g.epoch, g.expires_at, g.replayed), (4, T0 + 1000, true));
        assert_eq!(encode(&s), stored);
        assert_eq!(g.lease_id, s.lease_id("s").unwrap());
        // The same request id with other arguments (REQUEST_ID_REUSED): refused,
        // live or not, and nothing changes.
        for now in [T0 + 10, T0 + 1000] {
            for r in [
                req("A", 60_000, now, Some("r1")),
                req("B", 1000, now, Some("r1")),
                req("B", 60_000, now, Some("r1")),
            ] {
                assert_eq!(
                    acquire(&s, &r).unwrap(),
                    unchanged(IssuerResult::RequestIdReused)
                );
            }
        }
        assert_eq!(encode(&s), stored);
        // The same request after its lease expired does not get a new epoch.
        assert_eq!(
            acquire(&s, &req("A", 1000, T0 + 1000, Some("r1"))).unwrap(),
            unchanged(IssuerResult::Expired { epoch: 4 })
        );
        let b = granted(&run(&mut s, |s| {
            acquire(s, &req("B", 1000, T0 + 1000, None))
        }))
        .clone();
        assert_eq!(b.epoch, 5);
    }

    /// REQUEST_ID_REUSED: a format-1 lease recorded no ttl, so only the holder
    /// is compared: the same holder replays whatever ttl it sends.
    #[test]
    fn request_id_reuse_on_a_format_1_lease_compares_the_holder() {
        let s = IssuerState {
            epoch: 4,
            lease: Some(v1_lease("A", T0 + 1000, Some("r1"))),
        };
        let g = acquire(&s, &req("A", 60_000, T0, Some("r1"))).unwrap();
        assert_eq!(g.next, None);
        assert_eq!(
            granted(&g.result),
            &Grant {
                epoch: 4,
                lease_id: "s#4".into(),
                holder: "A".into(),
                expires_at: T0 + 1000,
                request_id: Some("r1".into()),
                replayed: true
            }
        );
        assert_eq!(
            acquire(&s, &req("B", 1000, T0, Some("r1"))).unwrap(),
            unchanged(IssuerResult::RequestIdReused)
        );
    }

    /// Lease ids are credentials: after A acquires, a renew or release with a
    /// guessed id or another holder's name is refused and changes nothing;
    /// A's own renew and release work.
    #[test]
    fn only_the_holder_renews_or_releases() {
        let mut s = IssuerState::default();
        let a = granted(&run(&mut s, |s| acquire(s, &req("A", 1000, 0, None)))).clone();
        let before = encode(&s);
        let guessed = [
            "s#1".to_owned(),
            "1.BDpxh3TFAAAAAAAAAAAAAAAAAAAAAA".to_owned(),
            format!("{}x", a.lease_id),
            a.lease_id[..a.lease_id.len() - 1].to_owned(),
            "1".to_owned(),
        ];
        for id in &guessed {
            for holder in ["A", "B"] {
                assert_eq!(
                    renew(&s, "s", id, holder, 1000, 900).unwrap(),
                    unchanged(IssuerResult::NotHeld)
                );
                assert_eq!(
                    release(&s, "s", id, holder).unwrap(),
                    unchanged(IssuerResult::NotHeld)
                );
            }
        }
        for holder in ["B", "a", "A "] {
            assert_eq!(
                renew(&s, "s", &a.lease_id, holder, 1000, 900).unwrap(),
                unchanged(IssuerResult::NotHeld)
            );
            assert_eq!(
                release(&s, "s", &a.lease_id, holder).unwrap(),
                unchanged(IssuerResult::NotHeld)
            );
        }
        assert_eq!(encode(&s), before);
        assert!(matches!(
            run(&mut s, |s| renew(s, "s", &a.lease_id, "A", 1000, 900)),
            IssuerResult::Renewed(Grant {
                epoch: 1,
                expires_at: 1900,
                ..
            })
        ));
        assert_eq!(
            run(&mut s, |s| release(s, "s", &a.lease_id, "A")),
            IssuerResult::Released {
                released: true,
                epoch: 1
            }
        );
        assert_eq!(encode(&s), r#"{"v":2,"epoch":"1","lease":null}"#);
        for r in [
            renew(&s, "s", &a.lease_id, "", 1, 0),
            release(&s, "s", &a.lease_id, ""),
        ] {
            assert_eq!(r.unwrap_err().code(), Code::InvalidArgument);
        }
    }

    /// An issuer restored to 40 hands 41 to B; A's renew and release
    /// with its old lease id of 41 are refused and B's lease is unchanged.
    #[test]
    fn a_restored_epoch_gets_a_new_lease_id() {
        let backup = IssuerState {
            epoch: 40,
            lease: None,
        };
        let mut s = backup.clone();
        let a = granted(&run(&mut s, |s| acquire(s, &req("A", 60_000, T0, None)))).clone();
        let mut s = backup.clone();
        let b = granted(&run(&mut s, |s| {
            acquire(s, &req("B", 60_000, T0 + 1, None))
        }))
        .clone();
        assert_eq!((a.epoch, b.epoch), (41, 41));
        assert_ne!(a.lease_id, b.lease_id);
        let stored = encode(&s);
        assert_eq!(
            renew(&s, "s", &a.lease_id, "A", 60_000, T0 + 2).unwrap(),
            unchanged(IssuerResult::NotHeld)
        );
        assert_eq!(
            release(&s, "s", &a.lease_id, "A").unwrap(),
            unchanged(IssuerResult::NotHeld)
        );
        assert_eq!(encode(&s), stored);
        assert_eq!(s.lease.as_ref().unwrap().expires_at, T0 + 60_001);
    }

    /// A format-1 record with a derived id and a live lease is
    /// renewed (staying format 1) and released by its holder, and nobody else.
    #[test]
    fn a_format_1_lease_keeps_working_for_its_holder() {
        let v1 = r#"{"v":1,"epoch":"7","lease":{"holder":"A","expiresAt":"1000","requestId":"r"}}"#;
        let mut s = decode(v1).unwrap();
        for (id, holder) in [
            ("s#7", "B"),
            ("s#6", "B"),
            ("t#7", "A"),
            ("7.BDpxh3TFAAAAAAAAAAAAAAAAAAAAAA", "A"),
        ] {
            let r = renew(&s, "s", id, holder, 500, 900).unwrap();
            assert_eq!(r.next, None);
            assert_ne!(r.result.code(), None, "{id} {holder}");
        }
        assert_eq!(
            renew(&s, "s", "s#7", "B", 500, 900).unwrap().result,
            IssuerResult::NotHeld
        );
        let r = run(&mut s, |s| renew(s, "s", "s#7", "A", 500, 900));
        assert_eq!(
            r,
            IssuerResult::Renewed(Grant {
                epoch: 7,
                lease_id: "s#7".into(),
                holder: "A".into(),
                expires_at: 1400,
                request_id: Some("r".into()),
                replayed: false
            })
        );
        assert_eq!(
            encode(&s),
            r#"{"v":1,"epoch":"7","lease":{"holder":"A","expiresAt":"1400","requestId":"r"}}"#
        );
        assert_eq!(
            release(&s, "s", "s#7", "B").unwrap(),
            unchanged(IssuerResult::NotHeld)
        );
        run(&mut s, |s| release(s, "s", "s#7", "A"));
        assert_eq!(encode(&s), r#"{"v":2,"epoch":"7","lease":null}"#);
        // The first acquisition writes format 2.
        let c = granted(&run(&mut s, |s| acquire(s, &req("C", 10, 2000, None)))).clone();
        assert!(c.lease_id.starts_with("8."));
        assert!(encode(&s).starts_with(r#"{"v":2,"epoch":"8","lease":{"id":"8."#));
        // A's derived id now names an older epoch: its lease is over.
        assert_eq!(
            renew(&s, "s", "s#7", "A", 10, 2001).unwrap(),
            unchanged(IssuerResult::Expired { epoch: 8 })
        );
    }

    /// Two issuers restored from one backup, each granting 1,000
    /// leases on one scope, hand out the same epochs but 2,000 distinct ids.
    #[test]
    fn lease_ids_never_repeat_across_restored_copies() {
        let backup = IssuerState {
            epoch: 40,
            lease: None,
        };
        let mut ids = HashSet::new();
        for copy in ["X", "Y"] {
            let mut s = backup.clone();
            for i in 0..1000u64 {
                let g = granted(&run(&mut s, |s| acquire(s, &req(copy, 1, i, None)))).clone();
                assert_eq!(g.epoch, 41 + i);
                assert!(g.lease_id.len() <= MAX_LEASE_ID_LEN);
                assert!(g
                    .lease_id
                    .bytes()
                    .all(|c| c.is_ascii_alphanumeric() || b"._-".contains(&c)));
                ids.insert(g.lease_id);
            }
        }
        assert_eq!(ids.len(), 2000);
    }

    /// With now = 1,700,000,000,000 A acquires; later now =
    /// 1,699,999,998,000 (the clock went back) and A's lease was released; B's
    /// epoch is still larger than A's.
    #[test]
    fn clock_going_backwards_never_lowers_an_epoch() {
        let mut s = IssuerState::default();
        let a = granted(&run(&mut s, |s| acquire(s, &req("A", 1000, T0, None)))).clone();
        run(&mut s, |s| release(s, "s", &a.lease_id, "A"));
        let b = granted(&run(&mut s, |s| {
            acquire(s, &req("B", 1000, 1_699_999_998_000, None))
        }))
        .clone();
        assert!(b.epoch > a.epoch);
        assert_eq!(b.expires_at, 1_699_999_999_000);
    }

    #[test]
    fn results_serialize_as_the_issuer_resolves_them_with_their_codes() {
        let json = |r: &IssuerResult| {
            serde_json::to_value(ScopedResult {
                scope: "s",
                result: r,
            })
            .unwrap()
        };
        let grant = Grant {
            epoch: 7,
            lease_id: "7.x".to_owned(),
            holder: "A".to_owned(),
            expires_at: 99,
            request_id: None,
            replayed: true,
        };
        assert_eq!(
            json(&IssuerResult::Granted(grant.clone())),
            serde_json::json!({ "ok": true, "code": null, "scope": "s", "epoch": 7, "leaseId": "7.x", "holder": "A", "expiresAt": 99, "requestId": null, "replayed": true })
        );
        assert_eq!(
            json(&IssuerResult::Renewed(grant)),
            serde_json::json!({ "ok": true, "code": null, "scope": "s", "epoch": 7, "leaseId": "7.x", "holder": "A", "expiresAt": 99, "requestId": null })
        );
        assert_eq!(
            json(&IssuerResult::Held {
                epoch: u64::MAX,
                holder: "B".to_owned(),
                expires_at: 5
            }),
            serde_json::json!({ "ok": false, "code": "LEASE_HELD", "scope": "s", "epoch": u64::MAX, "holder": "B", "expiresAt": 5 })
        );
        assert_eq!(
            json(&IssuerResult::Expired { epoch: 3 }),
            serde_json::json!({ "ok": false, "code": "LEASE_EXPIRED", "scope": "s", "epoch": 3 })
        );
        assert_eq!(
            json(&IssuerResult::NotHeld),
            serde_json::json!({ "ok": false, "code": "LEASE_NOT_HELD", "scope": "s" })
        );
        assert_eq!(
            json(&IssuerResult::RequestIdReused),
            serde_json::json!({ "ok": false, "code": "REQUEST_ID_REUSED", "scope": "s" })
        );
        assert_eq!(
            json(&IssuerResult::Released {
                released: false,
                epoch: 3
            }),
            serde_json::json!({ "ok": true, "code": null, "scope": "s", "released": false, "epoch": 3 })
        );
        assert_eq!(
            json(&IssuerResult::Raised {
                before: 3,
                after: 9,
                revoked: true
            }),
            serde_json::json!({ "ok": true, "code": null, "scope": "s", "epochBefore": 3, "epoch": 9, "revoked": true })
        );
        // The record Issuer.current reports: a v1 lease's id is derived from scope and epoch.
        let v1 = IssuerState {
            epoch: 4,
            lease: Some(Lease {
                holder: "A".to_owned(),
                expires_at: 10,
                request_id: Some("r".to_owned()),
                form: LeaseForm::Derived,
            }),
        };
        assert_eq!(
            serde_json::to_value(v1.record("s")).unwrap(),
            serde_json::json!({ "scope": "s", "epoch": 4, "lease": { "leaseId": "s#4", "holder": "A", "expiresAt": 10, "requestId": "r" } })
        );
    }

    #[test]
    fn overflow_at_the_largest_exact_epoch() {
        let s = IssuerState {
            epoch: MAX_SAFE_INTEGER - 1,
            lease: None,
        };
        let g = acquire(&s, &req("A", 1, 0, None)).unwrap();
        assert_eq!(granted(&g.result).epoch, MAX_SAFE_INTEGER);
        let s = g.next.unwrap();
        assert_eq!(
            acquire(&s, &req("B", 1, 1, None)),
            Err(IssuerError::EpochOverflow {
                epoch: MAX_SAFE_INTEGER,
                limit: MAX_SAFE_INTEGER
            })
        );
        // While the last lease is live the answer is still LEASE_HELD.
        assert!(matches!(
            acquire(&s, &req("B", 1, 0, None)).unwrap().result,
            IssuerResult::Held { .. }
        ));
        let mut big = req("B", 1, 1, None);
        big.limit = EpochLimit::BigInt;
        assert_eq!(granted(&acquire(&s, &big).unwrap().result).epoch, 1 << 53);
        let top = IssuerState {
            epoch: u64::MAX,
            lease: None,
        };
        let e = acquire(&top, &big).unwrap_err();
        assert_eq!(e.code(), Code::EpochOverflow);
    }

    #[test]
    fn bad_arguments_are_errors_not_panics() {
        let s = IssuerState::default();
        for (r, what) in [
            (req("", 1, 0, None), "empty holder"),
            (req("A", 0, 0, None), "ttl 0"),
            (req("A", 1, MAX_SAFE_INTEGER, None), "expiry overflow"),
            (req("A", MAX_SAFE_INTEGER, 1, None), "expiry overflow"),
            (req("A", u64::MAX, u64::MAX, None), "u64 overflow"),
            (req("A", 1, 0, Some("")), "empty request id"),
        ] {
            let e = acquire(&s, &r).unwrap_err();
            assert_eq!(e.code(), Code::InvalidArgument, "{what}");
        }
        let mut r = req("A", 1, 0, None);
        r.scope = "";
        assert_eq!(acquire(&s, &r).unwrap_err().code(), Code::InvalidArgument);
        for bad in [f64::NAN, f64::INFINITY, -1.0, 0.5, 9007199254740992.0, -0.5] {
            assert!(ms_from_f64("now", bad).is_err(), "{bad}");
        }
        assert_eq!(ms_from_f64("now", 0.0), Ok(0));
        assert_eq!(ms_from_f64("now", -0.0), Ok(0));
        assert_eq!(ms_from_f64("now", 9007199254740991.0), Ok(MAX_SAFE_INTEGER));
    }

    #[test]
    fn a_restored_issuer_is_detected_and_raised() {
        // Epoch 7 was issued, then the issuer state was restored to epoch 5.
        let restored = IssuerState {
            epoch: 5,
            lease: None,
        };
        for e in [
            renew(&restored, "s", "s#7", "A", 10, 0).unwrap_err(),
            release(&restored, "s", "s#7", "A").unwrap_err(),
            renew(
                &restored,
                "s",
                "7.BDpxh3TFAAAAAAAAAAAAAAAAAAAAAA",
                "A",
                10,
                0,
            )
            .unwrap_err(),
            release(&restored, "s", "7.BDpxh3TFAAAAAAAAAAAAAAAAAAAAAA", "A").unwrap_err(),
        ] {
            assert_eq!(e.code(), Code::CorruptState);
        }
        // A lease id of another scope (its tag differs) names no epoch of this
        // one: not a sign of a restore, just not this scope's lease.
        let other = keyed_lease_id("t", 7, &[1; LEASE_KEY_BYTES]);
        assert_eq!(
            renew(&restored, "s", &other, "A", 10, 0).unwrap(),
            unchanged(IssuerResult::NotHeld)
        );
        assert_eq!(
            release(&restored, "s", &other, "A").unwrap(),
            unchanged(IssuerResult::NotHeld)
        );
        let held = IssuerState {
            epoch: 5,
            lease: Some(v1_lease("A", 10, None)),
        };
        assert!(matches!(
            raise(&held, 9, 9).result,
            IssuerResult::Held { .. }
        ));
        assert_eq!(raise(&held, 9, 9).next, None);
        assert!(raise(&held, 9, 10).next.is_some());
        let raised = raise(&restored, 9, 0);
        assert_eq!(
            raised.result,
            IssuerResult::Raised {
                before: 5,
                after: 9,
                revoked: false
            }
        );
        let s = raised.next.unwrap();
        assert_eq!(
            granted(&acquire(&s, &req("A", 1, 0, None)).unwrap().result).epoch,
            10
        );
        assert_eq!(raise(&s, 3, 0).next, None);
    }

    /// Reconcile: the issuer was restored to 40 and handed 41 again to B while a
    /// resource holds 41 for A; reconcile revokes B's lease and the next
    /// acquisition is 42. Once revoked, nothing more changes.
    #[test]
    fn a_reused_live_lease_is_revoked() {
        let mut s = IssuerState {
            epoch: 40,
            lease: None,
        };
        let b = granted(&run(&mut s, |s| acquire(s, &req("B", 1000, T0, None)))).clone();
        assert_eq!(b.epoch, 41);
        let step = raise_revoking(&s, 41, T0 + 1);
        assert_eq!(
            step.result,
            IssuerResult::Raised {
                before: 41,
                after: 41,
                revoked: true
            }
        );
        s = step.next.unwrap();
        assert_eq!(s.lease, None);
        assert_eq!(raise_revoking(&s, 41, T0 + 2).next, None);
        assert_eq!(
            renew(&s, "s", &b.lease_id, "B", 1000, T0 + 2)
                .unwrap()
                .result,
            IssuerResult::Expired { epoch: 41 }
        );
        let c = granted(&run(&mut s, |s| acquire(s, &req("C", 1000, T0 + 3, None)))).clone();
        assert_eq!(c.epoch, 42);
        // A live lease above the floor stays: raise_revoking(41) under C@42 changes nothing.
        assert_eq!(raise_revoking(&s, 41, T0 + 4).next, None);
        assert!(matches!(
            raise_revoking(&s, 50, T0 + 4).result,
            IssuerResult::Raised {
                revoked: true,
                after: 50,
                ..
            }
        ));
    }

    #[derive(Clone, Debug)]
    enum Op {
        Acquire {
            holder: u8,
            ttl: u64,
            rid: Option<u8>,
        },
        Renew {
            pick: usize,
            ttl: u64,
            other_holder: bool,
        },
        Release {
            pick: usize,
            other_holder: bool,
        },
        Raise {
            by: u64,
        },
    }

    fn op() -> impl Strategy<Value = (Op, u64)> {
        let op = prop_oneof![
            4 => (0u8..3, 1u64..40, proptest::option::of(0u8..3))
                .prop_map(|(holder, ttl, rid)| Op::Acquire { holder, ttl, rid }),
            2 => (any::<usize>(), 1u64..40, proptest::bool::weighted(0.2))
                .prop_map(|(pick, ttl, other_holder)| Op::Renew { pick, ttl, other_holder }),
            2 => (any::<usize>(), proptest::bool::weighted(0.2))
                .prop_map(|(pick, other_holder)| Op::Release { pick, other_holder }),
            1 => (0u64..3).prop_map(|by| Op::Raise { by }),
        ];
        // Time mostly moves forward, sometimes backwards.
        (op, -10i64..30).prop_map(|(o, dt)| (o, dt as u64))
    }

    proptest! {
        /// Any state survives to_json → from_json exactly, and the text is
        /// plain JSON that serde_json reads to the same fields.
        #[test]
        fn state_text_round_trips(
            epoch in 1u64..,
            holder in ".+",
            expires_at in 0..=MAX_SAFE_INTEGER,
            request_id in proptest::option::of(".+"),
            leased in any::<bool>(),
            derived in any::<bool>(),
            random in any::<[u8; LEASE_KEY_BYTES]>(),
            ttl_ms in 1..=MAX_SAFE_INTEGER,
        ) {
            let form = if derived {
                LeaseForm::Derived
            } else {
                LeaseForm::Keyed { id: keyed_lease_id("s", epoch, &random), ttl_ms }
            };
            let s = IssuerState {
                epoch,
                lease: leased.then_some(Lease { holder, expires_at, request_id, form }),
            };
            let text = s.to_json();
            prop_assert_eq!(IssuerState::from_json(&text), Ok(s.clone()));
            let v: serde_json::Value = serde_json::from_str(&text).unwrap();
            prop_assert_eq!(&v["epoch"], &serde_json::Value::String(epoch.to_string()));
            if let Some(l) = &s.lease {
                prop_assert_eq!(&v["lease"]["holder"], &serde_json::Value::String(l.holder.clone()));
                let again = serde_json::to_string(&v).unwrap();
                prop_assert_eq!(IssuerState::from_json(&again), Ok(s.clone()));
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Over any sequence of operations: epochs strictly increase and are
        /// never issued twice, even when the host's clock goes backwards;
        /// unchanged and failed steps leave the stored bytes identical; every
        /// stored state round-trips exactly. When the host's time does not go
        /// backwards (`monotone`), a grant (or raise) happens only when no
        /// other lease is live at that instant, and only a live current lease
        /// can be renewed. (With a clock that jumps back, "live at an instant"
        /// has no single meaning; epochs still never go back.)
        #[test]
        fn issuer_invariants(
            ops in proptest::collection::vec(op(), 1..80),
            start in 0u64..1000,
            monotone in any::<bool>(),
        ) {
            let holders = ["h0", "h1", "h2"];
            let rids = ["r0", "r1", "r2"];
            let mut s = IssuerState::default();
            let mut now = start;
            let mut issued: Vec<Grant> = Vec::new();
            // epoch → (expiry, released) for every lease ever granted.
            let mut leases: HashMap<u64, (u64, bool)> = HashMap::new();
            let mut ids: HashSet<String> = HashSet::new();
            for (i, (op, dt)) in ops.into_iter().enumerate() {
                let dt = if monotone { (dt as i64).max(0) } else { dt as i64 };
                now = (now as i64 + dt).max(0) as u64;
                let before = encode(&s);
                let before_epoch = s.epoch;
                let step = match &op {
                    Op::Acquire { holder, ttl, rid } => acquire(&s, &AcquireRequest {
                        scope: "s",
                        holder: holders[*holder as usize],
                        ttl_ms: *ttl,
                        now_ms: now,
                        request_id: rid.map(|r| rids[r as usize]),
                        limit: EpochLimit::Number,
                        random: {
                            let mut r = [7u8; LEASE_KEY_BYTES];
                            r[..8].copy_from_slice(&(i as u64).to_le_bytes());
                            r
                        },
                    }),
                    Op::Renew { pick, other_holder, .. } | Op::Release { pick, other_holder } => {
                        // A lease id this issuer granted (or none), presented by its holder or another one.
                        let (id, holder) = issued.get(pick % (issued.len() + 1)).map_or(("s#0".to_owned(), "h0"), |g| {
                            let own = holders.iter().position(|h| *h == g.holder).unwrap_or(0);
                            let holder = if *other_holder { holders[(own + 1) % holders.len()] } else { holders[own] };
                            (g.lease_id.clone(), holder)
                        });
                        let current = s.lease.as_ref().map(|l| (l.id("s", s.epoch), l.holder.clone()));
                        let owns = current == Some((id.clone(), holder.to_owned()));
                        let step = match &op {
                            Op::Renew { ttl, .. } => renew(&s, "s", &id, holder, *ttl, now),
                            _ => release(&s, "s", &id, holder),
                        };
                        // Only the current lease's id with its holder renews or releases anything.
                        if let Ok(Step { result: IssuerResult::Renewed(_) | IssuerResult::Released { released: true, .. }, .. }) = &step {
                            prop_assert!(owns, "{:?} succeeded for {} {}", op, id, holder);
                        }
                        if !owns && current.is_some() && id.starts_with(&format!("{}.", s.epoch)) {
                            prop_assert_eq!(step.as_ref().map(|s| s.result.clone()), Ok(IssuerResult::NotHeld));
                        }
                        step
                    }
                    Op::Raise { by } => Ok(raise(&s, s.epoch + by, now)),
                };
                let step = match step {
                    Ok(step) => step,
                    Err(e) => {
                        prop_assert!(e.code() != Code::CorruptState, "{e}");
                        prop_assert_eq!(encode(&s), before);
                        continue;
                    }
                };
                match &step.result {
                    IssuerResult::Granted(g) if !g.replayed => {
                        prop_assert_eq!(g.epoch, before_epoch + 1);
                        prop_assert!(issued.iter().all(|o| o.epoch < g.epoch));
                        for (e, (exp, released)) in &leases {
                            prop_assert!(!monotone || *released || *exp <= now, "epoch {} granted at {} while {} live until {}", g.epoch, now, e, exp);
                        }
                        leases.insert(g.epoch, (g.expires_at, false));
                        prop_assert!(ids.insert(g.lease_id.clone()), "lease id {} repeated", g.lease_id);
                        issued.push(g.clone());
                    }
                    IssuerResult::Granted(g) => {
                        prop_assert!(step.next.is_none());
                        prop_assert!(issued.iter().any(|o| o.epoch == g.epoch && o.request_id == g.request_id));
                        prop_assert!(now < g.expires_at);
                    }
                    IssuerResult::Renewed(g) => {
                        prop_assert_eq!(g.epoch, s.epoch);
                        let entry = leases.get_mut(&g.epoch);
                        prop_assert!(entry.as_ref().is_some_and(|(exp, rel)| !rel && (!monotone || now < *exp)));
                        if let Some(entry) = entry { entry.0 = g.expires_at; }
                    }
                    IssuerResult::Released { released: true, epoch } => {
                        if let Some(entry) = leases.get_mut(epoch) { entry.1 = true; }
                    }
                    IssuerResult::Raised { after, .. } if *after > before_epoch => {
                        for (e, (exp, released)) in &leases {
                            prop_assert!(!monotone || *released || *exp <= now, "raised at {} while {} live until {}", now, e, exp);
                        }
                    }
                    _ => prop_assert!(step.next.is_none()),
                }
                match step.next {
                    None => prop_assert_eq!(encode(&s), before),
                    Some(next) => {
                        prop_assert!(next.epoch >= before_epoch);
                        prop_assert_eq!(decode(&encode(&next)), Ok(next.clone()));
                        s = next;
                    }
                }
            }
        }
    }
}
