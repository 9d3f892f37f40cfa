//! Signed, scoped fence tokens: where an epoch came from (DESIGN R9).
//!
//! A plain number can be forged: a client that sends 2^63 once raises the mark
//! so high that the rightful owner is locked out for good. A signed token binds
//! the epoch to a scope, a lease and the issuer that minted it, so a resource
//! can check that the epoch came from the issuer before it compares epochs.
//!
//! # Text form, version 1
//!
//! ```text
//! fg1.<base64url(claims)>.<base64url(signature)>
//! ```
//!
//! * `fg1` — the format version. Any other prefix is `MALFORMED_TOKEN`.
//! * base64url is RFC 4648 §5 without padding, canonical only: no `=`, no
//!   whitespace, no `+`/`/`, unused trailing bits must be zero. A text that
//!   decodes to the right bytes but is not the one canonical encoding of them
//!   is refused, never normalised.
//! * `claims` is the canonical binary encoding below; `signature` is 32 bytes
//!   (HMAC-SHA256) or 64 bytes (Ed25519), matching the claims' algorithm.
//! * The signature covers the ASCII bytes `fg1.` followed by the raw claim
//!   bytes ([`signing_input`]), so the version prefix is authenticated.
//! * The whole text is at most [`MAX_TEXT_LEN`] bytes; longer input is refused
//!   before any decoding. The characters are `[A-Za-z0-9_.-]`: safe in URLs,
//!   HTTP headers, cookies and JSON strings without escaping.
//!
//! Claims (all integers big-endian, no optional fields, nothing after the end):
//!
//! | bytes | field | rule |
//! |---|---|---|
//! | 1 | algorithm | `1` = HMAC-SHA256, `2` = Ed25519 |
//! | 8 | epoch | u64, ≥ 1 |
//! | 8 | issuer generation | u64 (bumped when an issuer is restored, R11) |
//! | 1 + n | key id | n in 1..=64, `[A-Za-z0-9._-]` |
//! | 2 + n | scope | n in 1..=512, UTF-8 |
//! | 1 + n | lease id | n in 0..=128, UTF-8 |
//!
//! # Verification order
//!
//! [`Keyring::verify`] checks, in this order, and stops at the first failure:
//! the text form (`MALFORMED_TOKEN`), the key id (`KEY_RETIRED` when the ring
//! lists it as retired, `UNKNOWN_KEY` when it has no key of that id), the
//! algorithm and signature (`BAD_SIGNATURE`, constant-time for HMAC), and only
//! then the scope (`WRONG_SCOPE`), so that `WRONG_SCOPE` always describes a
//! genuine token that was minted for another scope. Epoch comparison comes after
//! all of these (see [`crate::policy`]).

use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::mem::{size_of, MaybeUninit};
use thiserror::Error;
use zeroize::Zeroize;

use crate::error::Code;
use crate::format::quoted;

/// The version prefix of the text form, without the dot.
pub const VERSION_PREFIX: &str = "fg1";
/// Longest key id, in bytes.
pub const MAX_KID_LEN: usize = 64;
/// Longest scope, in UTF-8 bytes.
pub const MAX_SCOPE_LEN: usize = 512;
/// Longest lease id, in UTF-8 bytes.
pub const MAX_LEASE_ID_LEN: usize = 128;
/// Shortest HMAC secret accepted, in bytes (256 bits, the hash's output size).
pub const MIN_HMAC_KEY_LEN: usize = 32;
/// Longest HMAC secret accepted, in bytes.
pub const MAX_HMAC_KEY_LEN: usize = 1024;
/// Largest claims encoding, in bytes.
pub const MAX_CLAIMS_LEN: usize =
    1 + 8 + 8 + 1 + MAX_KID_LEN + 2 + MAX_SCOPE_LEN + 1 + MAX_LEASE_ID_LEN;
/// Largest signature, in bytes (Ed25519).
pub const MAX_SIGNATURE_LEN: usize = 64;
/// Longest accepted text form, in bytes.
pub const MAX_TEXT_LEN: usize =
    VERSION_PREFIX.len() + 1 + b64_len(MAX_CLAIMS_LEN) + 1 + b64_len(MAX_SIGNATURE_LEN);

const fn b64_len(bytes: usize) -> usize {
    (bytes * 4).div_ceil(3)
}

/// The signature algorithm of a token and of a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// HMAC-SHA256 with a shared secret: whoever can verify can also mint.
    HmacSha256,
    /// Ed25519: a resource holding only the public key can verify, not mint.
    Ed25519,
}

impl Algorithm {
    /// The algorithm byte of the wire form (also the binding's `claims_alg`).
    pub(crate) const fn byte(self) -> u8 {
        match self {
            Algorithm::HmacSha256 => 1,
            Algorithm::Ed25519 => 2,
        }
    }

    /// The algorithm of a wire-form byte, if any.
    pub(crate) const fn from_byte(b: u8) -> Option<Algorithm> {
        match b {
            1 => Some(Algorithm::HmacSha256),
            2 => Some(Algorithm::Ed25519),
            _ => None,
        }
    }

    /// The signature length in bytes.
    pub const fn signature_len(self) -> usize {
        match self {
            Algorithm::HmacSha256 => 32,
            Algorithm::Ed25519 => 64,
        }
    }

    /// The JS name: `"hmac-sha256"` or `"ed25519"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Algorithm::HmacSha256 => "hmac-sha256",
            Algorithm::Ed25519 => "ed25519",
        }
    }
}

/// What a signed token says. Every field is covered by the signature.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Claims {
    /// The signature algorithm (must match the key's).
    pub alg: Algorithm,
    /// The fencing token: an ownership epoch ≥ 1.
    pub epoch: u64,
    /// The issuer generation: raised when an issuer is restored or re-keyed, so
    /// a resource can tell tokens of a restored issuer apart (R11). Any u64.
    pub generation: u64,
    /// The id of the key that signed the token: 1..=64 bytes of `[A-Za-z0-9._-]`.
    pub kid: String,
    /// What the token is for (lock or resource name): 1..=512 UTF-8 bytes.
    pub scope: String,
    /// The lease the epoch was issued for: 0..=128 UTF-8 bytes.
    pub lease_id: String,
}

/// Why a signed token was refused, or why its claims or key cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum SignedError {
    /// The text (or claims) is not a valid version-1 token. Code `MALFORMED_TOKEN`.
    #[error("malformed signed token: {0}")]
    Malformed(&'static str),
    /// No key with the token's key id is configured. Code `UNKNOWN_KEY`.
    #[error("no key with id {} is configured", quoted(.0))]
    UnknownKey(String),
    /// The token's key id is listed as retired. Code `KEY_RETIRED`.
    #[error("key {} is retired", quoted(.0))]
    KeyRetired(String),
    /// The signature does not verify, or the token's algorithm is not its key's.
    /// Code `BAD_SIGNATURE`.
    #[error("the token's signature does not verify")]
    BadSignature,
    /// A genuine token minted for another scope. Code `WRONG_SCOPE`.
    #[error("token scope {} is not this resource's scope {}", quoted(.found), quoted(.expected))]
    WrongScope {
        /// The scope the resource expects.
        expected: String,
        /// The scope in the token.
        found: String,
    },
    /// A key or claims value supplied by the host is unusable. Code `INVALID_ARGUMENT`.
    #[error("{0}")]
    InvalidArgument(String),
}

impl SignedError {
    /// The stable code for this error.
    pub const fn code(&self) -> Code {
        match self {
            SignedError::Malformed(_) => Code::MalformedToken,
            SignedError::UnknownKey(_) => Code::UnknownKey,
            SignedError::KeyRetired(_) => Code::KeyRetired,
            SignedError::BadSignature => Code::BadSignature,
            SignedError::WrongScope { .. } => Code::WrongScope,
            SignedError::InvalidArgument(_) => Code::InvalidArgument,
        }
    }
}

fn valid_kid(kid: &str) -> bool {
    (1..=MAX_KID_LEN).contains(&kid.len())
        && kid
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

impl Claims {
    /// Checks every field's rule (see the module table).
    pub fn validate(&self) -> Result<(), SignedError> {
        if self.epoch == 0 {
            return Err(SignedError::InvalidArgument(
                "a signed token's epoch is at least 1".to_owned(),
            ));
        }
        if !valid_kid(&self.kid) {
            return Err(SignedError::InvalidArgument(format!(
                "a key id is 1 to {MAX_KID_LEN} characters of [A-Za-z0-9._-], got {}",
                quoted(&self.kid)
            )));
        }
        if self.scope.is_empty() || self.scope.len() > MAX_SCOPE_LEN {
            return Err(SignedError::InvalidArgument(format!(
                "a scope is 1 to {MAX_SCOPE_LEN} UTF-8 bytes, got {}",
                self.scope.len()
            )));
        }
        if self.lease_id.len() > MAX_LEASE_ID_LEN {
            return Err(SignedError::InvalidArgument(format!(
                "a lease id is 0 to {MAX_LEASE_ID_LEN} UTF-8 bytes, got {}",
                self.lease_id.len()
            )));
        }
        Ok(())
    }

    /// The canonical binary encoding (fields already validated).
    fn encode(&self) -> Vec<u8> {
        let mut out =
            Vec::with_capacity(21 + 2 + self.kid.len() + self.scope.len() + self.lease_id.len());
        out.push(self.alg.byte());
        out.extend_from_slice(&self.epoch.to_be_bytes());
        out.extend_from_slice(&self.generation.to_be_bytes());
        // Lengths were validated: kid ≤ 64, scope ≤ 512, lease id ≤ 128.
        out.push(self.kid.len() as u8);
        out.extend_from_slice(self.kid.as_bytes());
        out.extend_from_slice(&(self.scope.len() as u16).to_be_bytes());
        out.extend_from_slice(self.scope.as_bytes());
        out.push(self.lease_id.len() as u8);
        out.extend_from_slice(self.lease_id.as_bytes());
        out
    }

    /// Decodes the canonical binary encoding strictly: every rule of the module
    /// table, and no trailing bytes.
    fn decode(bytes: &[u8]) -> Result<Claims, SignedError> {
        let mut r = Reader(bytes);
        let alg = Algorithm::from_byte(r.u8()?)
            .ok_or(SignedError::Malformed("unknown signature algorithm"))?;
        let epoch = r.u64()?;
        if epoch == 0 {
            return Err(SignedError::Malformed("epoch 0 in a signed token"));
        }
        let generation = r.u64()?;
        let kid_len = usize::from(r.u8()?);
        let kid = r.text(kid_len)?;
        if !valid_kid(&kid) {
            return Err(SignedError::Malformed("invalid key id"));
        }
        let scope_len = usize::from(r.u16()?);
        if scope_len == 0 || scope_len > MAX_SCOPE_LEN {
            return Err(SignedError::Malformed("scope length out of range"));
        }
        let scope = r.text(scope_len)?;
        let lease_len = usize::from(r.u8()?);
        if lease_len > MAX_LEASE_ID_LEN {
            return Err(SignedError::Malformed("lease id length out of range"));
        }
        let lease_id = r.text(lease_len)?;
        if !r.0.is_empty() {
            return Err(SignedError::Malformed("trailing bytes after the claims"));
        }
        Ok(Claims {
            alg,
            epoch,
            generation,
            kid,
            scope,
            lease_id,
        })
    }
}

struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], SignedError> {
        if self.0.len() < n {
            return Err(SignedError::Malformed("claims are truncated"));
        }
        let (head, tail) = self.0.split_at(n);
        self.0 = tail;
        Ok(head)
    }

    fn u8(&mut self) -> Result<u8, SignedError> {
        Ok(self.take(1)?[0])
    }

    fn u16(&mut self) -> Result<u16, SignedError> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    fn u64(&mut self) -> Result<u64, SignedError> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8)?);
        Ok(u64::from_be_bytes(a))
    }

    fn text(&mut self, n: usize) -> Result<String, SignedError> {
        let b = self.take(n)?;
        std::str::from_utf8(b)
            .map(str::to_owned)
            .map_err(|_| SignedError::Malformed("a text field is not UTF-8"))
    }
}

/// The prefix of every signed message: the version and its dot.
const SIGNING_PREFIX: &[u8] = b"fg1.";

/// The bytes a signature covers: `fg1.` followed by the raw claim bytes.
pub fn signing_input(claim_bytes: &[u8]) -> Vec<u8> {
    let mut m = Vec::with_capacity(VERSION_PREFIX.len() + 1 + claim_bytes.len());
    m.extend_from_slice(VERSION_PREFIX.as_bytes());
    m.push(b'.');
    m.extend_from_slice(claim_bytes);
    m
}

/// What the host verifies for a token under a [`Key::HostEd25519`] key
/// ([`Keyring::host_check`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostCheck {
    /// The token's key id.
    pub kid: String,
    /// The key's 32 public key bytes.
    pub public_key: [u8; 32],
    /// The bytes the signature covers ([`signing_input`]).
    pub signing_input: Vec<u8>,
    /// The 64 signature bytes.
    pub signature: Vec<u8>,
}

/// A token split into its parts, before any key is consulted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Parsed {
    /// The decoded claims (not yet authenticated).
    pub claims: Claims,
    /// The exact claim bytes the signature covers.
    pub claim_bytes: Vec<u8>,
    /// The signature bytes, of the claims' algorithm's length.
    pub signature: Vec<u8>,
}

const B64_ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Appends the unpadded base64url (RFC 4648 §5) encoding of `bytes`.
///
/// A dozen lines instead of the `base64` crate: the crate's general-purpose
/// engine is several times larger in the `.wasm`. The tests check this codec against
/// the crate (`URL_SAFE_NO_PAD`) on arbitrary input.
pub fn b64_encode(bytes: &[u8], out: &mut String) {
    for chunk in bytes.chunks(3) {
        let b1 = chunk.get(1).copied().unwrap_or(0);
        let b2 = chunk.get(2).copied().unwrap_or(0);
        let n = (u32::from(chunk[0]) << 16) | (u32::from(b1) << 8) | u32::from(b2);
        for i in 0..=chunk.len() {
            out.push(char::from(
                B64_ALPHABET[((n >> (18 - 6 * i)) & 63) as usize],
            ));
        }
    }
}

fn b64_value(c: u8) -> Option<u32> {
    let v = match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'-' => 62,
        b'_' => 63,
        _ => return None,
    };
    Some(u32::from(v))
}

/// Decodes canonical unpadded base64url only: no padding, no other alphabet,
/// no whitespace, no impossible length, and the unused low bits of the last
/// character must be zero — so every byte string has exactly one accepted text.
pub fn b64_decode_canonical(text: &[u8]) -> Option<Vec<u8>> {
    if text.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(text.len() / 4 * 3 + 2);
    for chunk in text.chunks(4) {
        let mut n = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            n |= b64_value(c)? << (18 - 6 * i);
        }
        let len = chunk.len() - 1;
        let unused = 0x00ff_ffff >> (8 * len);
        if n & unused != 0 {
            return None;
        }
        out.extend_from_slice(&n.to_be_bytes()[1..=len]);
    }
    Some(out)
}

fn b64_decode(part: &str, max: usize) -> Result<Vec<u8>, SignedError> {
    if part.is_empty() {
        return Err(SignedError::Malformed("an empty part"));
    }
    if part.len() > b64_len(max) {
        return Err(SignedError::Malformed("a part is too long"));
    }
    b64_decode_canonical(part.as_bytes()).ok_or(SignedError::Malformed(
        "a part is not canonical unpadded base64url",
    ))
}

/// Parses the text form strictly (see the module docs). Never panics, whatever
/// the input; allocates at most a few kilobytes because length is checked first.
pub fn parse(text: &str) -> Result<Parsed, SignedError> {
    if text.len() > MAX_TEXT_LEN {
        return Err(SignedError::Malformed("token text is too long"));
    }
    // A char predicate, not `split('.')`: the char searcher would link memchr into the
    // .wasm (docs/decisions/wasm-size.md).
    #[allow(clippy::manual_pattern_char_comparison)]
    let mut parts = text.split(|c: char| c == '.');
    let (Some(version), Some(claims), Some(signature), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(SignedError::Malformed(
            "a signed token has three dot-separated parts: fg1.<claims>.<signature>",
        ));
    };
    if version != VERSION_PREFIX {
        return Err(SignedError::Malformed(
            "unknown signed-token version (this build reads fg1)",
        ));
    }
    let claim_bytes = b64_decode(claims, MAX_CLAIMS_LEN)?;
    let claims = Claims::decode(&claim_bytes)?;
    let signature = b64_decode(signature, MAX_SIGNATURE_LEN)?;
    if signature.len() != claims.alg.signature_len() {
        return Err(SignedError::Malformed(
            "signature length does not match the algorithm",
        ));
    }
    Ok(Parsed {
        claims,
        claim_bytes,
        signature,
    })
}

/// Whether `text` looks like a signed token (starts with `fg` and a digit), for
/// hosts that accept both signed and plain decimal tokens in one header.
pub fn looks_signed(text: &str) -> bool {
    let b = text.as_bytes();
    b.len() > 2 && b[0] == b'f' && b[1] == b'g' && b[2].is_ascii_digit()
}

/// A key a resource verifies with, or an issuer mints with.
#[derive(Clone)]
pub enum Key {
    /// An HMAC-SHA256 key (from a MIN_HMAC_KEY_LEN..=MAX_HMAC_KEY_LEN-byte
    /// secret), kept with its inner and outer pads already hashed, so each
    /// token costs two SHA-256 blocks fewer. Mints and verifies.
    Hmac(Box<HmacSha256>),
    /// An Ed25519 public key: verifies only.
    #[cfg(feature = "ed25519")]
    Ed25519Public(ed25519_dalek::VerifyingKey),
    /// An Ed25519 signing key (from its 32-byte seed): mints and verifies.
    #[cfg(feature = "ed25519")]
    Ed25519Secret(ed25519_dalek::SigningKey),
    /// An Ed25519 public key (32 bytes) whose signatures the host checks
    /// (WebCrypto; docs/decisions/signed-tokens-verification.md): a token under it is accepted only through
    /// [`Keyring::verify_parsed_host`] with the host's "verified"; on its own
    /// the keyring refuses it with `BAD_SIGNATURE`. Verifies nothing, mints nothing.
    HostEd25519([u8; 32]),
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print secrets.
        f.write_str(match self {
            Key::Hmac(_) => "Key::Hmac(..)",
            #[cfg(feature = "ed25519")]
            Key::Ed25519Public(_) => "Key::Ed25519Public(..)",
            #[cfg(feature = "ed25519")]
            Key::Ed25519Secret(_) => "Key::Ed25519Secret(..)",
            Key::HostEd25519(_) => "Key::HostEd25519(..)",
        })
    }
}

type HmacSha256 = Hmac<Sha256>;

impl Drop for Key {
    /// Wipes the key material when a key is dropped (a gate freed, a key
    /// retired, a one-off mint done), so it does not stay readable in freed
    /// Wasm memory. An Ed25519 signing key wipes itself (ed25519-dalek's
    /// `zeroize` feature); a public key is not secret.
    #[allow(irrefutable_let_patterns)] // without the `ed25519` feature, Hmac is the only key
    fn drop(&mut self) {
        if let Key::Hmac(mac) = self {
            let mac: &mut HmacSha256 = mac;
            // SAFETY: `Hmac<Sha256>` (hmac 0.12, sha2 0.10) is flat data: two
            // SHA-256 states ([u32; 8] and a u64 block count) and a block buffer
            // ([u8; 64] and a u8 position); no pointers, no Drop, and all zeros is
            // a valid value. It is dropped (freed) right after. These crates have
            // no zeroize support of their own. The bytes are viewed as
            // `MaybeUninit<u8>` because the struct may have padding.
            let bytes = unsafe {
                std::slice::from_raw_parts_mut(
                    (mac as *mut HmacSha256).cast::<MaybeUninit<u8>>(),
                    size_of::<HmacSha256>(),
                )
            };
            wipe(bytes);
        }
    }
}

/// Zeroes `bytes` in a way the compiler does not remove (the `zeroize` crate).
/// Not inlined: a loop, not an unrolled fill at each call site (Wasm size).
#[inline(never)]
fn wipe(bytes: &mut [MaybeUninit<u8>]) {
    bytes.zeroize();
}

/// Zeroes a byte buffer, its spare capacity included (see [`wipe`]). Used by
/// the resource-side binding only (the issuer-side module holds no keys).
#[cfg_attr(not(feature = "resource"), allow(dead_code))]
pub(crate) fn wipe_vec(v: &mut Vec<u8>) {
    // SAFETY: a `u8` is a valid `MaybeUninit<u8>`, and only zeros are written.
    let len = v.len();
    let bytes =
        unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<MaybeUninit<u8>>(), len) };
    wipe(bytes);
    wipe(v.spare_capacity_mut());
}

impl Key {
    /// An HMAC-SHA256 key. `INVALID_ARGUMENT` unless 32..=1024 bytes.
    pub fn hmac(secret: &[u8]) -> Result<Key, SignedError> {
        if !(MIN_HMAC_KEY_LEN..=MAX_HMAC_KEY_LEN).contains(&secret.len()) {
            return Err(SignedError::InvalidArgument(format!(
                "an HMAC-SHA256 secret is {MIN_HMAC_KEY_LEN} to {MAX_HMAC_KEY_LEN} bytes, got {}",
                secret.len()
            )));
        }
        HmacSha256::new_from_slice(secret)
            .map(|mac| Key::Hmac(Box::new(mac)))
            .map_err(|_| SignedError::InvalidArgument("unusable HMAC key".to_owned()))
    }

    /// An Ed25519 verifying key from its 32-byte encoding. `INVALID_ARGUMENT`
    /// for a wrong length or a point that does not decode.
    #[cfg(feature = "ed25519")]
    pub fn ed25519_public(bytes: &[u8]) -> Result<Key, SignedError> {
        let arr: [u8; 32] = bytes.try_into().map_err(|_| {
            SignedError::InvalidArgument(format!(
                "an Ed25519 public key is 32 bytes, got {}",
                bytes.len()
            ))
        })?;
        ed25519_dalek::VerifyingKey::from_bytes(&arr)
            .map(Key::Ed25519Public)
            .map_err(|_| SignedError::InvalidArgument("not an Ed25519 public key".to_owned()))
    }

    /// An Ed25519 signing key from its 32-byte seed (the RFC 8032 secret key).
    #[cfg(feature = "ed25519")]
    pub fn ed25519_secret(seed: &[u8]) -> Result<Key, SignedError> {
        let arr: [u8; 32] = seed.try_into().map_err(|_| {
            SignedError::InvalidArgument(format!(
                "an Ed25519 secret key (seed) is 32 bytes, got {}",
                seed.len()
            ))
        })?;
        Ok(Key::Ed25519Secret(ed25519_dalek::SigningKey::from_bytes(
            &arr,
        )))
    }

    /// The 32-byte public key of an Ed25519 key (secret or public); `None` for HMAC.
    #[cfg(feature = "ed25519")]
    pub fn ed25519_public_bytes(&self) -> Option<[u8; 32]> {
        match self {
            Key::Hmac(_) => None,
            Key::HostEd25519(k) => Some(*k),
            Key::Ed25519Public(k) => Some(k.to_bytes()),
            Key::Ed25519Secret(k) => Some(k.verifying_key().to_bytes()),
        }
    }

    /// The algorithm this key signs or verifies with.
    pub fn alg(&self) -> Algorithm {
        match self {
            Key::Hmac(_) => Algorithm::HmacSha256,
            #[cfg(feature = "ed25519")]
            Key::Ed25519Public(_) | Key::Ed25519Secret(_) => Algorithm::Ed25519,
            Key::HostEd25519(_) => Algorithm::Ed25519,
        }
    }

    /// An Ed25519 public key that the host verifies with (see [`Key::HostEd25519`]).
    pub fn host_ed25519(bytes: &[u8]) -> Result<Key, SignedError> {
        bytes.try_into().map(Key::HostEd25519).map_err(|_| {
            SignedError::InvalidArgument(format!(
                "an Ed25519 public key is 32 bytes, got {}",
                bytes.len()
            ))
        })
    }

    /// Signs [`signing_input`]`(claim_bytes)`.
    fn sign(&self, claim_bytes: &[u8]) -> Result<Vec<u8>, SignedError> {
        match self {
            Key::Hmac(keyed) => {
                let mut mac = HmacSha256::clone(keyed);
                mac.update(SIGNING_PREFIX);
                mac.update(claim_bytes);
                Ok(mac.finalize().into_bytes().to_vec())
            }
            #[cfg(feature = "ed25519")]
            Key::Ed25519Public(_) => Err(SignedError::InvalidArgument(
                "an Ed25519 public key can verify but not mint".to_owned(),
            )),
            #[cfg(feature = "ed25519")]
            Key::Ed25519Secret(k) => Ok(ed25519_sign(k, &signing_input(claim_bytes)).to_vec()),
            Key::HostEd25519(_) => Err(SignedError::InvalidArgument(
                "an Ed25519 public key can verify but not mint".to_owned(),
            )),
        }
    }

    /// Verifies a signature over [`signing_input`]`(claim_bytes)`.
    /// Constant-time for HMAC (`verify_slice`); Ed25519 uses `verify_strict`.
    fn verify(&self, claim_bytes: &[u8], signature: &[u8]) -> bool {
        match self {
            Key::Hmac(keyed) => {
                let mut mac = HmacSha256::clone(keyed);
                mac.update(SIGNING_PREFIX);
                mac.update(claim_bytes);
                mac.verify_slice(signature).is_ok()
            }
            #[cfg(feature = "ed25519")]
            Key::Ed25519Public(k) => ed25519_verify(k, &signing_input(claim_bytes), signature),
            #[cfg(feature = "ed25519")]
            Key::Ed25519Secret(k) => {
                ed25519_verify(&k.verifying_key(), &signing_input(claim_bytes), signature)
            }
            // Only the host verifies these (`Keyring::verify_parsed_host`).
            Key::HostEd25519(_) => false,
        }
    }
}

/// RFC 8032 Ed25519 signing (PureEdDSA): the steps of ed25519-dalek's `raw_sign`
/// (key expansion by its `hazmat::ExpandedSecretKey`), with one change for the
/// .wasm size: `s = r + k·a mod L` by double-and-add with `Scalar` addition instead
/// of curve25519-dalek's Montgomery `Scalar * Scalar` (unrolled code that nothing
/// else uses; docs/decisions/wasm-size.md). The signature is byte for byte the one ed25519-dalek makes
/// (tests: RFC 8032's vectors, and a proptest against its `Signer`). No branch or
/// index depends on the seed, `a` or `r`.
#[cfg(feature = "ed25519")]
#[allow(non_snake_case)]
fn ed25519_sign(key: &ed25519_dalek::SigningKey, message: &[u8]) -> [u8; 64] {
    use curve25519_dalek::{EdwardsPoint, Scalar};
    use ed25519_dalek::hazmat::ExpandedSecretKey;
    use sha2::{Digest, Sha512};
    use zeroize::Zeroize;

    let mut seed = key.to_bytes();
    // Wiped on drop (ed25519-dalek's `zeroize` feature).
    let expanded = ExpandedSecretKey::from(&seed);
    seed.zeroize();
    let hash = |parts: &[&[u8]]| {
        let mut h = Sha512::new();
        for part in parts {
            h.update(part);
        }
        Scalar::from_bytes_mod_order_wide(&h.finalize().into())
    };
    let mut r = hash(&[&expanded.hash_prefix, message]);
    let R = EdwardsPoint::mul_base(&r).compress();
    let k = hash(&[R.as_bytes(), key.verifying_key().as_bytes(), message]);
    // s = r + k·a mod L by double-and-add over k's bits. k is public (a hash of R,
    // A and the message, which the signature and the key show), so the branch on
    // its bits tells nothing about a; each `Scalar` addition is constant-time.
    let mut s = r;
    let mut a = expanded.scalar;
    for byte in k.as_bytes() {
        for bit in 0..8 {
            if byte >> bit & 1 == 1 {
                s += a;
            }
            a += a;
        }
    }
    let mut signature = [0u8; 64];
    signature[..32].copy_from_slice(R.as_bytes());
    signature[32..].copy_from_slice(s.as_bytes());
    r.zeroize();
    a.zeroize();
    s.zeroize();
    signature
}

#[cfg(feature = "ed25519")]
fn ed25519_verify(key: &ed25519_dalek::VerifyingKey, message: &[u8], signature: &[u8]) -> bool {
    match <[u8; 64]>::try_from(signature) {
        Ok(bytes) => key
            .verify_strict(message, &ed25519_dalek::Signature::from_bytes(&bytes))
            .is_ok(),
        Err(_) => false,
    }
}

/// Mints the text form of `claims` with `key`. The claims' `alg` is set from
/// the key. `INVALID_ARGUMENT` when a claim breaks its rule or the key cannot mint.
pub fn mint(claims: &Claims, key: &Key) -> Result<String, SignedError> {
    let mut claims = claims.clone();
    claims.alg = key.alg();
    claims.validate()?;
    let claim_bytes = claims.encode();
    let signature = key.sign(&claim_bytes)?;
    let mut out = String::with_capacity(MAX_TEXT_LEN);
    out.push_str(VERSION_PREFIX);
    out.push('.');
    b64_encode(&claim_bytes, &mut out);
    out.push('.');
    b64_encode(&signature, &mut out);
    Ok(out)
}

/// Keys by id, and the ids that were retired.
///
/// Rotation: add the new key, mint with it, keep the old key while tokens
/// signed with it may still be in flight (at most one lease term), then retire
/// the old id. A retired id is refused with `KEY_RETIRED`, and can never be
/// added back to the same ring; an id the ring never heard of is `UNKNOWN_KEY`.
#[derive(Clone, Debug, Default)]
pub struct Keyring {
    keys: Vec<(String, Key)>,
    retired: Vec<String>,
}

impl Keyring {
    /// An empty ring.
    pub fn new() -> Keyring {
        Keyring::default()
    }

    /// Adds a key. `INVALID_ARGUMENT` for a bad id, a duplicate id or a retired id.
    pub fn insert(&mut self, kid: &str, key: Key) -> Result<(), SignedError> {
        if !valid_kid(kid) {
            return Err(SignedError::InvalidArgument(format!(
                "a key id is 1 to {MAX_KID_LEN} characters of [A-Za-z0-9._-], got {}",
                quoted(kid)
            )));
        }
        if self.retired.iter().any(|r| r == kid) {
            return Err(SignedError::InvalidArgument(format!(
                "key id {} is retired and cannot be used again",
                quoted(kid)
            )));
        }
        if self.get(kid).is_some() {
            return Err(SignedError::InvalidArgument(format!(
                "key id {} is configured twice",
                quoted(kid)
            )));
        }
        self.keys.push((kid.to_owned(), key));
        Ok(())
    }

    /// Retires a key id: its key is dropped and tokens naming it are refused
    /// with `KEY_RETIRED` from now on. Retiring an unknown id records it too.
    pub fn retire(&mut self, kid: &str) -> Result<(), SignedError> {
        if !valid_kid(kid) {
            return Err(SignedError::InvalidArgument(format!(
                "a key id is 1 to {MAX_KID_LEN} characters of [A-Za-z0-9._-], got {}",
                quoted(kid)
            )));
        }
        self.keys.retain(|(k, _)| k != kid);
        if !self.retired.iter().any(|r| r == kid) {
            self.retired.push(kid.to_owned());
        }
        Ok(())
    }

    /// The key configured under `kid`.
    pub fn get(&self, kid: &str) -> Option<&Key> {
        self.keys.iter().find(|(k, _)| k == kid).map(|(_, key)| key)
    }

    /// Whether no key is configured.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// The configured key ids, in insertion order.
    pub fn kids(&self) -> impl Iterator<Item = &str> {
        self.keys.iter().map(|(k, _)| k.as_str())
    }

    /// The retired key ids.
    pub fn retired(&self) -> impl Iterator<Item = &str> {
        self.retired.iter().map(String::as_str)
    }

    /// Mints with the key `kid` (see [`mint`]). `UNKNOWN_KEY` / `KEY_RETIRED` when absent.
    pub fn mint(&self, kid: &str, claims: &Claims) -> Result<String, SignedError> {
        let key = self.lookup(kid)?;
        let mut claims = claims.clone();
        claims.kid = kid.to_owned();
        mint(&claims, key)
    }

    /// What the host must verify for `text` under a [`Key::HostEd25519`] key:
    /// the key id, its 32 public key bytes, the signing input and the
    /// signature; `None` when the text does not parse, its key id is retired,
    /// unknown or not such a key, or the algorithm differs (the decision then
    /// refuses it as [`Keyring::verify`] would).
    pub fn host_check(&self, text: &str) -> Option<HostCheck> {
        let parsed = parse(text).ok()?;
        match self.lookup(&parsed.claims.kid).ok()? {
            Key::HostEd25519(k) if parsed.claims.alg == Algorithm::Ed25519 => Some(HostCheck {
                kid: parsed.claims.kid,
                public_key: *k,
                signing_input: signing_input(&parsed.claim_bytes),
                signature: parsed.signature,
            }),
            _ => None,
        }
    }

    fn lookup(&self, kid: &str) -> Result<&Key, SignedError> {
        if self.retired.iter().any(|r| r == kid) {
            return Err(SignedError::KeyRetired(kid.to_owned()));
        }
        self.get(kid)
            .ok_or_else(|| SignedError::UnknownKey(kid.to_owned()))
    }

    /// Authenticates `text` and returns its claims (see the module docs for the
    /// order of checks). `expected_scope`: `Some(s)` refuses genuine tokens of
    /// other scopes with `WRONG_SCOPE`; `None` skips the scope check (for tools
    /// that only inspect tokens — a gate always passes its scope).
    pub fn verify(&self, text: &str, expected_scope: Option<&str>) -> Result<Claims, SignedError> {
        let parsed = parse(text)?;
        self.verify_parsed(parsed, expected_scope)
    }

    /// [`Keyring::verify`] for an already parsed token.
    pub fn verify_parsed(
        &self,
        parsed: Parsed,
        expected_scope: Option<&str>,
    ) -> Result<Claims, SignedError> {
        self.verify_parsed_host(parsed, expected_scope, false)
    }

    /// [`Keyring::verify_parsed`] where the host has checked the signature of
    /// a token under a [`Key::HostEd25519`] key (WebCrypto): `host_verified`
    /// stands for that key's signature check, in the same place of the order
    /// of checks (after the key id and algorithm, before the scope). Every
    /// other key verifies here as always.
    pub fn verify_parsed_host(
        &self,
        parsed: Parsed,
        expected_scope: Option<&str>,
        host_verified: bool,
    ) -> Result<Claims, SignedError> {
        let key = self.lookup(&parsed.claims.kid)?;
        if key.alg() != parsed.claims.alg {
            return Err(SignedError::BadSignature);
        }
        let genuine = match key {
            Key::HostEd25519(_) => host_verified,
            _ => key.verify(&parsed.claim_bytes, &parsed.signature),
        };
        if !genuine {
            return Err(SignedError::BadSignature);
        }
        if let Some(expected) = expected_scope {
            if parsed.claims.scope != expected {
                return Err(SignedError::WrongScope {
                    expected: expected.to_owned(),
                    found: parsed.claims.scope,
                });
            }
        }
        Ok(parsed.claims)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine;
    use proptest::prelude::*;

    pub(crate) const K1: &[u8; 32] = b"0123456789abcdef0123456789abcdef";
    pub(crate) const K2: &[u8; 32] = b"fedcba9876543210fedcba9876543210";

    pub(crate) fn claims(scope: &str, epoch: u64) -> Claims {
        Claims {
            alg: Algorithm::HmacSha256,
            epoch,
            generation: 1,
            kid: "k1".to_owned(),
            scope: scope.to_owned(),
            lease_id: "lease-7".to_owned(),
        }
    }

    pub(crate) fn ring() -> Keyring {
        let mut r = Keyring::new();
        r.insert("k1", Key::hmac(K1).unwrap()).unwrap();
        r
    }

    #[test]
    fn round_trip_and_exact_text() {
        let r = ring();
        let c = claims("orders", 42);
        let t = r.mint("k1", &c).unwrap();
        assert!(t.starts_with("fg1."));
        assert!(t
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_')));
        assert_eq!(r.verify(&t, Some("orders")), Ok(c.clone()));
        assert_eq!(r.verify(&t, None), Ok(c));
        // The claims part is the documented binary layout.
        let parsed = parse(&t).unwrap();
        let mut expected = vec![1u8];
        expected.extend_from_slice(&42u64.to_be_bytes());
        expected.extend_from_slice(&1u64.to_be_bytes());
        expected.extend_from_slice(b"\x02k1\x00\x06orders\x07lease-7");
        assert_eq!(parsed.claim_bytes, expected);
        // And the MAC is HMAC-SHA256 over "fg1." + those bytes.
        let mut mac = HmacSha256::new_from_slice(K1).unwrap();
        mac.update(b"fg1.");
        mac.update(&expected);
        assert_eq!(parsed.signature, mac.finalize().into_bytes().to_vec());
        assert!(t.len() <= MAX_TEXT_LEN);
        assert_eq!(MAX_TEXT_LEN, 1058);
    }

    #[test]
    fn maximal_claims_fit_the_limit() {
        let mut c = claims(&"s".repeat(MAX_SCOPE_LEN), u64::MAX);
        c.lease_id = "l".repeat(MAX_LEASE_ID_LEN);
        c.kid = "k".repeat(MAX_KID_LEN);
        let mut r = Keyring::new();
        r.insert(&c.kid, Key::hmac(K1).unwrap()).unwrap();
        let t = r.mint(&c.kid.clone(), &c).unwrap();
        assert!(t.len() <= MAX_TEXT_LEN);
        assert_eq!(r.verify(&t, None), Ok(c));
        // One more byte anywhere is refused at mint time.
        let mut big = claims(&"s".repeat(MAX_SCOPE_LEN + 1), 1);
        assert_eq!(r.mint("k1", &big).unwrap_err().code(), Code::UnknownKey);
        assert_eq!(
            mint(&big, &Key::hmac(K1).unwrap()).unwrap_err().code(),
            Code::InvalidArgument
        );
        big.scope = "x".to_owned();
        big.lease_id = "l".repeat(MAX_LEASE_ID_LEN + 1);
        assert_eq!(
            mint(&big, &Key::hmac(K1).unwrap()).unwrap_err().code(),
            Code::InvalidArgument
        );
    }

    #[test]
    fn invalid_claims_and_keys() {
        let key = Key::hmac(K1).unwrap();
        for (kid, scope, epoch) in [
            ("", "s", 1),
            ("k 1", "s", 1),
            ("k/1", "s", 1),
            ("k1", "", 1),
            ("k1", "s", 0),
        ] {
            let mut c = claims(scope, epoch);
            c.kid = kid.to_owned();
            assert_eq!(
                mint(&c, &key).unwrap_err().code(),
                Code::InvalidArgument,
                "{kid:?} {scope:?} {epoch}"
            );
        }
        assert!(Key::hmac(&[0u8; 31]).is_err());
        assert!(Key::hmac(&[0u8; 32]).is_ok());
        assert!(Key::hmac(&[0u8; 1025]).is_err());
        let mut r = ring();
        assert!(r.insert("k1", Key::hmac(K2).unwrap()).is_err());
        assert!(r.insert("bad id", Key::hmac(K2).unwrap()).is_err());
        r.retire("k1").unwrap();
        assert!(r.insert("k1", Key::hmac(K2).unwrap()).is_err());
    }

    #[test]
    fn keys_rotate() {
        let mut old = Keyring::new();
        old.insert("2026-01", Key::hmac(K1).unwrap()).unwrap();
        let t_old = old.mint("2026-01", &claims("s", 5)).unwrap();

        let mut r = Keyring::new();
        r.insert("2026-01", Key::hmac(K1).unwrap()).unwrap();
        r.insert("2026-02", Key::hmac(K2).unwrap()).unwrap();
        let t_new = r.mint("2026-02", &claims("s", 6)).unwrap();
        assert_eq!(r.verify(&t_old, Some("s")).unwrap().epoch, 5);
        assert_eq!(r.verify(&t_new, Some("s")).unwrap().kid, "2026-02");

        r.retire("2026-01").unwrap();
        assert_eq!(
            r.verify(&t_old, Some("s")),
            Err(SignedError::KeyRetired("2026-01".to_owned()))
        );
        assert_eq!(r.verify(&t_new, Some("s")).unwrap().epoch, 6);
        assert_eq!(r.kids().collect::<Vec<_>>(), ["2026-02"]);
        assert_eq!(r.retired().collect::<Vec<_>>(), ["2026-01"]);

        let mut other = Keyring::new();
        other.insert("2026-02", Key::hmac(K2).unwrap()).unwrap();
        assert_eq!(
            other.verify(&t_old, Some("s")),
            Err(SignedError::UnknownKey("2026-01".to_owned()))
        );
    }

    #[test]
    fn a_key_with_the_same_id_but_another_secret_is_a_bad_signature() {
        let t = ring().mint("k1", &claims("s", 1)).unwrap();
        let mut r = Keyring::new();
        r.insert("k1", Key::hmac(K2).unwrap()).unwrap();
        assert_eq!(r.verify(&t, Some("s")), Err(SignedError::BadSignature));
    }

    #[test]
    fn scope_is_checked_after_the_signature() {
        let r = ring();
        let t = r.mint("k1", &claims("orders", 3)).unwrap();
        assert_eq!(
            r.verify(&t, Some("invoices")),
            Err(SignedError::WrongScope {
                expected: "invoices".to_owned(),
                found: "orders".to_owned()
            })
        );
        // A forged token with another scope is a bad signature, not a wrong scope.
        let forged = mint(&claims("orders", 3), &Key::hmac(K2).unwrap()).unwrap();
        assert_eq!(
            r.verify(&forged, Some("invoices")),
            Err(SignedError::BadSignature)
        );
    }

    /// Re-signs `claims` (encoded by hand, possibly non-canonical) with K1.
    fn resign(claim_bytes: &[u8]) -> String {
        let mut mac = HmacSha256::new_from_slice(K1).unwrap();
        mac.update(&signing_input(claim_bytes));
        format!(
            "fg1.{}.{}",
            URL_SAFE_NO_PAD.encode(claim_bytes),
            URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
        )
    }

    #[test]
    fn strict_claims_even_when_signed() {
        let r = ring();
        let good = claims("s", 9).encode();
        assert_eq!(r.verify(&resign(&good), Some("s")).unwrap().epoch, 9);
        let mut trailing = good.clone();
        trailing.push(0);
        let mut epoch0 = good.clone();
        epoch0[1..9].copy_from_slice(&0u64.to_be_bytes());
        let mut alg3 = good.clone();
        alg3[0] = 3;
        let mut bad_utf8 = good.clone();
        let n = bad_utf8.len();
        bad_utf8[n - 1] = 0xff;
        for (name, bytes) in [
            ("trailing", trailing),
            ("epoch 0", epoch0),
            ("alg 3", alg3),
            ("bad utf-8", bad_utf8),
            ("truncated", good[..good.len() - 1].to_vec()),
            ("empty", vec![]),
        ] {
            assert_eq!(
                r.verify(&resign(&bytes), Some("s")).map_err(|e| e.code()),
                Err(Code::MalformedToken),
                "{name}"
            );
        }
    }

    #[test]
    fn strict_text() {
        let r = ring();
        let t = r.mint("k1", &claims("s", 9)).unwrap();
        let (v, rest) = t.split_once('.').unwrap();
        let (c, s) = rest.split_once('.').unwrap();
        assert_eq!(v, "fg1");
        let std_b64 = base64::engine::general_purpose::STANDARD;
        let padded = base64::engine::general_purpose::URL_SAFE;
        let raw_c = URL_SAFE_NO_PAD.decode(c).unwrap();
        let raw_s = URL_SAFE_NO_PAD.decode(s).unwrap();
        let bad = [
            String::new(),
            "fg1".to_owned(),
            "fg1..".to_owned(),
            format!("fg2.{c}.{s}"),
            format!("FG1.{c}.{s}"),
            format!("fg01.{c}.{s}"),
            format!(" {t}"),
            format!("{t} "),
            format!("{t}\n"),
            format!("{t}."),
            format!("{t}.x"),
            format!("fg1.{c}"),
            format!("fg1.{c}.{s}="),
            format!("fg1.{}.{s}", padded.encode(&raw_c)),
            format!("fg1.{c}.{}", padded.encode(&raw_s)),
            format!("fg1.{}.{}", std_b64.encode(&raw_c), std_b64.encode(&raw_s)),
            format!("fg1.{c}.{s}A"),
            format!("fg1.{c}.{s}AA"),
            format!("fg1.{c}A.{s}"),
            format!("fg1.{c}.{}", &s[..s.len() - 1]),
            "x".repeat(MAX_TEXT_LEN + 1),
            format!("fg1.{}.{s}", "A".repeat(2000)),
        ];
        for b in &bad {
            assert_eq!(
                r.verify(b, Some("s")).map_err(|e| e.code()),
                Err(Code::MalformedToken),
                "{b:?}"
            );
        }
        // Non-canonical trailing bits: the signature part (32 bytes → 43 chars)
        // has 2 unused bits in its last character.
        let last = s.as_bytes()[s.len() - 1];
        let alphabet = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        let idx = alphabet.iter().position(|&a| a == last).unwrap();
        for bits in 1..4 {
            let alt = alphabet[(idx & !3) | ((idx & 3) ^ bits)] as char;
            let mut s2 = s[..s.len() - 1].to_owned();
            s2.push(alt);
            let t2 = format!("fg1.{c}.{s2}");
            assert_eq!(
                r.verify(&t2, Some("s")).map_err(|e| e.code()),
                Err(Code::MalformedToken),
                "{t2}"
            );
        }
    }

    #[test]
    fn looks_signed_distinguishes_decimal() {
        assert!(looks_signed("fg1.x.y"));
        assert!(!looks_signed("12"));
        assert!(!looks_signed("fg"));
        assert!(!looks_signed("fgx"));
    }

    /// Each field of the claims, one byte changed, the original MAC kept: never accepted.
    #[test]
    fn a_changed_byte_in_every_field_is_refused() {
        let r = ring();
        let t = r.mint("k1", &claims("orders", 42)).unwrap();
        let p = parse(&t).unwrap();
        // alg | epoch | generation | kid len, kid | scope len, scope | lease len, lease
        let fields = [
            ("alg", 0..1),
            ("epoch", 1..9),
            ("generation", 9..17),
            ("kid", 17..20),
            ("scope", 20..28),
            ("lease id", 28..p.claim_bytes.len()),
        ];
        for (name, range) in fields {
            for i in range {
                for delta in [1u8, 0x80] {
                    let mut c = p.claim_bytes.clone();
                    c[i] = c[i].wrapping_add(delta);
                    let mut text = String::from("fg1.");
                    b64_encode(&c, &mut text);
                    text.push('.');
                    b64_encode(&p.signature, &mut text);
                    let code = r.verify(&text, Some("orders")).map_err(|e| e.code());
                    assert!(
                        matches!(
                            code,
                            Err(Code::BadSignature | Code::MalformedToken | Code::UnknownKey)
                        ),
                        "{name} byte {i}: {code:?}"
                    );
                }
            }
        }
        // And a changed signature byte, anywhere.
        for i in 0..p.signature.len() {
            let mut sig = p.signature.clone();
            sig[i] ^= 1;
            let mut text = String::from("fg1.");
            b64_encode(&p.claim_bytes, &mut text);
            text.push('.');
            b64_encode(&sig, &mut text);
            assert_eq!(r.verify(&text, None), Err(SignedError::BadSignature));
        }
    }

    /// A deterministic mutation fuzzer for the text parser, run for a fixed
    /// time by `scripts/fuzz-signed.sh` (`FUZZ_SECONDS`, default 10). Checks: no
    /// panic on any input, and no mutation of a valid token is ever accepted.
    #[test]
    #[ignore = "long-running; scripts/fuzz-signed.sh runs it"]
    fn fuzz_parser_for_a_while() {
        let seconds: u64 = std::env::var("FUZZ_SECONDS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(10);
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let r = {
            let mut r = ring();
            r.insert("k2", Key::hmac(K2).unwrap()).unwrap();
            r
        };
        let mut corpus: Vec<String> = Vec::new();
        for (i, scope) in ["s", "orders", "ünïcødé/scope", &"x".repeat(512)]
            .iter()
            .enumerate()
        {
            let mut c = claims(scope, [1, 42, 1 << 53, u64::MAX][i]);
            c.lease_id = ["", "l", &"L".repeat(128), "lease-7"][i].to_owned();
            corpus.push(r.mint(if i % 2 == 0 { "k1" } else { "k2" }, &c).unwrap());
        }
        let originals: std::collections::HashSet<String> = corpus.iter().cloned().collect();
        let alphabet =
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.=+/ \n\x00";
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(seconds);
        let (mut execs, mut accepted_originals) = (0u64, 0u64);
        while std::time::Instant::now() < deadline {
            for _ in 0..1000 {
                let base = &corpus[(next() % corpus.len() as u64) as usize];
                let mut b = base.clone().into_bytes();
                for _ in 0..=(next() % 3) {
                    let n = b.len().max(1) as u64;
                    match next() % 7 {
                        0 if !b.is_empty() => {
                            let i = (next() % n) as usize;
                            b[i] ^= 1 << (next() % 8);
                        }
                        1 if !b.is_empty() => {
                            let i = (next() % n) as usize;
                            b[i] = alphabet[(next() % alphabet.len() as u64) as usize];
                        }
                        2 => {
                            let i = (next() % (n + 1)) as usize;
                            b.insert(
                                i.min(b.len()),
                                alphabet[(next() % alphabet.len() as u64) as usize],
                            );
                        }
                        3 if !b.is_empty() => {
                            b.remove((next() % n) as usize);
                        }
                        4 => b.truncate((next() % (n + 1)) as usize),
                        5 => {
                            let other = &corpus[(next() % corpus.len() as u64) as usize];
                            let cut = (next() % (other.len() as u64 + 1)) as usize;
                            let at = (next() % (n + 1)) as usize;
                            b.truncate(at.min(b.len()));
                            b.extend_from_slice(&other.as_bytes()[cut..]);
                        }
                        _ => {
                            let len = (next() % 1200) as usize;
                            b = (0..len).map(|_| (next() % 256) as u8).collect();
                        }
                    }
                }
                let text = String::from_utf8_lossy(&b);
                let result = r.verify(&text, None);
                execs += 1;
                if result.is_ok() {
                    assert!(
                        originals.contains(text.as_ref()),
                        "accepted a mutation: {text}"
                    );
                    accepted_originals += 1;
                }
            }
        }
        println!(
            "fuzz: {execs} executions in {seconds} s, 0 findings ({accepted_originals} mutations returned an original token and verified)"
        );
    }

    #[cfg(feature = "ed25519")]
    fn hex32(s: &str) -> [u8; 32] {
        let mut out = [0u8; 32];
        for (i, o) in out.iter_mut().enumerate() {
            *o = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap();
        }
        out
    }

    /// A host-verified Ed25519 key (WebCrypto) accepts a token only
    /// with the host's "verified", after the key id and algorithm checks and
    /// before the scope; on its own it is BAD_SIGNATURE.
    #[cfg(feature = "ed25519")]
    #[test]
    fn host_verified_ed25519_key() {
        let seed = hex32("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60");
        let public = hex32("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a");
        let mut issuer = Keyring::new();
        issuer
            .insert("ed-1", Key::ed25519_secret(&seed).unwrap())
            .unwrap();
        let mut c = claims("s", 3);
        c.alg = Algorithm::Ed25519;
        c.kid = "ed-1".to_owned();
        let t = issuer.mint("ed-1", &c).unwrap();
        let mut ring = Keyring::new();
        ring.insert("ed-1", Key::host_ed25519(&public).unwrap())
            .unwrap();
        ring.retire("gone").unwrap();
        let check = ring.host_check(&t).unwrap();
        let p = parse(&t).unwrap();
        assert_eq!(
            (check.kid.as_str(), check.public_key, &check.signature),
            ("ed-1", public, &p.signature)
        );
        assert_eq!(check.signing_input, signing_input(&p.claim_bytes));
        assert_eq!(ring.verify(&t, Some("s")), Err(SignedError::BadSignature));
        let host = |text: &str, scope: &str, ok: bool| {
            parse(text).and_then(|p| ring.verify_parsed_host(p, Some(scope), ok))
        };
        assert_eq!(host(&t, "s", true).map(|c| c.epoch), Ok(3));
        assert_eq!(host(&t, "s", false), Err(SignedError::BadSignature));
        assert!(matches!(
            host(&t, "other", true),
            Err(SignedError::WrongScope { .. })
        ));
        // Retired and unknown ids are refused before the host is asked.
        c.kid = "gone".to_owned();
        let mut old = Keyring::new();
        old.insert("gone", Key::ed25519_secret(&seed).unwrap())
            .unwrap();
        let retired = old.mint("gone", &c).unwrap();
        assert_eq!(ring.host_check(&retired), None);
        assert_eq!(
            host(&retired, "s", true),
            Err(SignedError::KeyRetired("gone".to_owned()))
        );
        // An HMAC token naming the Ed25519 key: no host check, BAD_SIGNATURE even if "verified".
        let mut h = claims("s", 4);
        h.kid = "ed-1".to_owned();
        let confused = mint(&h, &Key::hmac(&public).unwrap()).unwrap();
        assert_eq!(ring.host_check(&confused), None);
        assert_eq!(host(&confused, "s", true), Err(SignedError::BadSignature));
        assert_eq!(
            Key::host_ed25519(&public[..31]).unwrap_err().code(),
            Code::InvalidArgument
        );
    }

    #[cfg(feature = "ed25519")]
    #[test]
    fn ed25519_resource_verifies_without_minting() {
        // RFC 8032 §7.1 test 1: the seed and the public key it derives.
        let seed = hex32("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60");
        let public = hex32("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a");
        let secret = Key::ed25519_secret(&seed).unwrap();
        assert_eq!(secret.ed25519_public_bytes(), Some(public));
        let mut issuer = Keyring::new();
        issuer.insert("ed-1", secret).unwrap();
        let t = issuer.mint("ed-1", &claims("s", 3)).unwrap();
        assert_eq!(parse(&t).unwrap().signature.len(), 64);

        let mut resource = Keyring::new();
        resource
            .insert("ed-1", Key::ed25519_public(&public).unwrap())
            .unwrap();
        let c = resource.verify(&t, Some("s")).unwrap();
        assert_eq!((c.alg, c.epoch), (Algorithm::Ed25519, 3));
        assert_eq!(
            resource.mint("ed-1", &claims("s", 4)).unwrap_err().code(),
            Code::InvalidArgument
        );
        // Algorithm confusion: an HMAC token keyed with the public key bytes.
        let mut c = claims("s", 1 << 62);
        c.kid = "ed-1".to_owned();
        let confused = mint(&c, &Key::hmac(&public).unwrap()).unwrap();
        assert_eq!(
            resource.verify(&confused, Some("s")),
            Err(SignedError::BadSignature)
        );
        // Any flipped signature bit.
        let p = parse(&t).unwrap();
        for i in 0..64 * 8 {
            let mut sig = p.signature.clone();
            sig[i / 8] ^= 1 << (i % 8);
            let text = format!(
                "fg1.{}.{}",
                URL_SAFE_NO_PAD.encode(&p.claim_bytes),
                URL_SAFE_NO_PAD.encode(&sig)
            );
            assert!(resource.verify(&text, Some("s")).is_err(), "bit {i}");
        }
        assert!(Key::ed25519_public(&[0u8; 31]).is_err());
        assert!(Key::ed25519_secret(&[0u8; 33]).is_err());
    }

    #[cfg(feature = "ed25519")]
    fn hex(s: &str) -> Vec<u8> {
        (0..s.len() / 2)
            .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
            .collect()
    }

    /// `ed25519_sign` (no `Scalar * Scalar`) against RFC 8032 §7.1,
    /// tests 1 to 3 and SHA(abc), byte for byte.
    #[cfg(feature = "ed25519")]
    #[test]
    fn ed25519_sign_matches_rfc_8032() {
        let vectors = [
            (
                "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
                "",
                "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b",
            ),
            (
                "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
                "72",
                "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00",
            ),
            (
                "c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7",
                "af82",
                "6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a",
            ),
            (
                "833fe62409237b9d62ec77587520911e9a759cec1d19755b7da901b96dca3d42",
                "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f",
                "dc2a4459e7369633a52b1bf277839a00201009a3efbf3ecb69bea2186c26b58909351fc9ac90b3ecfdfbc7c66431e0303dca179c138ac17ad9bef1177331a704",
            ),
        ];
        for (seed, message, signature) in vectors {
            let key = ed25519_dalek::SigningKey::from_bytes(&hex32(seed));
            assert_eq!(ed25519_sign(&key, &hex(message)).to_vec(), hex(signature));
        }
    }

    #[cfg(feature = "ed25519")]
    proptest! {
        /// `ed25519_sign` makes the signature ed25519-dalek's `Signer` makes.
        #[test]
        fn prop_ed25519_sign_matches_dalek(
            seed in any::<[u8; 32]>(),
            message in proptest::collection::vec(any::<u8>(), 0..300),
        ) {
            use ed25519_dalek::Signer;
            let key = ed25519_dalek::SigningKey::from_bytes(&seed);
            prop_assert_eq!(ed25519_sign(&key, &message), key.sign(&message).to_bytes());
        }
    }

    fn arb_claims() -> impl Strategy<Value = Claims> {
        (
            1u64..,
            any::<u64>(),
            "[A-Za-z0-9._-]{1,64}",
            "\\PC{1,60}",
            "\\PC{0,40}",
        )
            .prop_filter_map("lengths", |(epoch, generation, kid, scope, lease_id)| {
                let c = Claims {
                    alg: Algorithm::HmacSha256,
                    epoch,
                    generation,
                    kid,
                    scope,
                    lease_id,
                };
                c.validate().ok().map(|()| c)
            })
    }

    fn ring_for(kid: &str) -> Keyring {
        let mut r = Keyring::new();
        r.insert(kid, Key::hmac(K1).unwrap()).unwrap();
        r
    }

    proptest! {
        #[test]
        fn prop_round_trip(c in arb_claims()) {
            let r = ring_for(&c.kid);
            let t = r.mint(&c.kid, &c).unwrap();
            prop_assert!(t.len() <= MAX_TEXT_LEN);
            prop_assert_eq!(r.verify(&t, Some(&c.scope)), Ok(c));
        }

        #[test]
        fn prop_any_single_bit_flip_fails(c in arb_claims(), pos in any::<prop::sample::Index>(), bit in 0u8..8) {
            let r = ring_for(&c.kid);
            let t = r.mint(&c.kid, &c).unwrap();
            let mut bytes = t.clone().into_bytes();
            let i = pos.index(bytes.len());
            bytes[i] ^= 1 << bit;
            // A flip may make invalid UTF-8: that can never reach the parser as &str.
            if let Ok(s) = String::from_utf8(bytes) {
                prop_assert!(r.verify(&s, None).is_err(), "accepted {} (from {})", s, t);
            }
        }

        #[test]
        fn prop_any_truncation_or_extension_fails(c in arb_claims(), cut in any::<prop::sample::Index>(), extra in "[A-Za-z0-9._=-]{1,4}") {
            let r = ring_for(&c.kid);
            let t = r.mint(&c.kid, &c).unwrap();
            let n = cut.index(t.len());
            prop_assert!(r.verify(&t[..n], None).is_err());
            let longer = format!("{t}{extra}");
            prop_assert!(r.verify(&longer, None).is_err());
        }

        #[test]
        fn prop_b64_matches_the_base64_crate(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let mut ours = String::new();
            b64_encode(&bytes, &mut ours);
            prop_assert_eq!(&ours, &URL_SAFE_NO_PAD.encode(&bytes));
            prop_assert_eq!(b64_decode_canonical(ours.as_bytes()), Some(bytes));
        }

        #[test]
        fn prop_b64_decode_accepts_exactly_what_the_crate_accepts_canonically(text in "[A-Za-z0-9_=+/ -]{0,40}") {
            let crate_canonical = URL_SAFE_NO_PAD
                .decode(&text)
                .ok()
                .filter(|b| URL_SAFE_NO_PAD.encode(b) == text);
            prop_assert_eq!(b64_decode_canonical(text.as_bytes()), crate_canonical);
        }

        #[test]
        fn prop_arbitrary_text_never_panics(s in "\\PC{0,200}") {
            let _ = parse(&s);
            let _ = ring().verify(&s, Some("s"));
        }

        #[test]
        fn prop_token_shaped_garbage_never_verifies(c in "[A-Za-z0-9_-]{0,120}", s in "[A-Za-z0-9_-]{0,90}") {
            let t = format!("fg1.{c}.{s}");
            prop_assert!(ring().verify(&t, None).is_err());
        }

        #[test]
        fn prop_arbitrary_claim_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..800)) {
            let _ = Claims::decode(&bytes);
            // Signed garbage: either refused as malformed or, when it is a
            // canonical encoding, re-encodes to the same bytes.
            if let Ok(c) = ring().verify(&resign(&bytes), None) {
                prop_assert_eq!(c.encode(), bytes);
            }
        }
    }
}
