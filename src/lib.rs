//! fencegate: the resource-side check for fencing tokens.
//!
//! When a lease expires its former holder may only be paused; when it wakes it
//! still sends writes. A fencing token (epoch) grows on every acquisition, and
//! the *resource* keeps the highest epoch it has accepted (the high-water mark)
//! and refuses smaller ones, in the same atomic step as the data change.
//!
//! This crate is the pure core (no `JsValue`): [`token`] validation,
//! [`decision`] (advance / accept / reject), [`state`] encoding, the
//! in-memory [`store`], [`signed`] tokens and the gate [`policy`] (provenance
//! and higher epochs). The [`wasm`] module is the only code that touches
//! JavaScript.

pub mod decision;
pub mod error;
pub mod format;
#[cfg(test)]
mod format_fixture;
#[cfg(test)]
mod format_strictness;
#[cfg(test)]
mod fuzz;
pub mod issuer;
pub mod ops;
pub mod policy;
pub mod reconcile;
pub mod signed;
pub mod state;
pub mod store;
pub mod token;
#[doc(hidden)]
pub mod typescript;
pub mod wasm;

pub use decision::{decide, Operation, Outcome, SameEpoch, Verdict};
pub use error::{Code, StateError, TokenError};
pub use policy::{decide_with_policy, GatePolicy, HigherEpoch, Presented};
pub use signed::{Algorithm, Claims, Key, Keyring, SignedError};
pub use state::ResourceState;
pub use token::{epoch_from_f64, epoch_from_u64, parse_token, MAX_SAFE_INTEGER};

/// The Wasm build allocates with Talc instead of std's dlmalloc: as fast and smaller
/// (docs/decisions/wasm-size.md). Single-threaded Wasm only.
#[cfg(all(target_family = "wasm", not(target_feature = "atomics")))]
#[global_allocator]
static TALC: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();
