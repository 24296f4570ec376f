//! Vault domain: the writable folder's policy, listing, reads, scans, search and writes.

pub mod glob;
pub mod policy;
