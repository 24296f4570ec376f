//! Manual domain: discovery, section model, reads, exception vocabulary, search.
//!
//! Architecture invariant: nothing here knows MCP or JSON-RPC. Functions take and return
//! plain Rust domain types; every failure a client can see is a [`crate::error::ToolError`].
//! The server layer converts between these types and the published schemas.
//!
//! Code map: `catalog` finds manuals and files (and is the only code that opens them);
//! `catalog_store` keeps each file's outline and line table under `CACHE_DIR`, so a
//! start parses only changed files; `file` holds one file's line table and nodes, not its
//! text; `source` reads a file's text again for a reader, checked against the file's
//! stamp; `sections` derives the nodes of a
//! Markdown file from comrak's AST; `index` keeps everything in memory and refreshes it;
//! `reference` resolves a client's `ref`; `read` is `manual_read`; `exceptions` is the
//! exception vocabulary and its matcher; `excepts` is `manual_excepts`; `find` is the
//! search engine behind `manual_find` and `manual_hits`.

mod cache_file;
mod catalog;
mod catalog_store;
pub(crate) mod exceptions;
pub(crate) mod excepts;
mod excerpt;
pub(crate) mod file;
pub(crate) mod find;
mod front_matter;
mod heading;
pub(crate) mod index;
mod lines;
pub(crate) mod node;
pub(crate) mod read;
pub(crate) mod reference;
mod sections;
mod source;
mod validate;
pub mod vectors;
mod watch;

pub(crate) use catalog_store::CatalogStore;
pub use exceptions::ExceptionCategory;
pub use excepts::{manual_excepts, ExceptItem, ExceptsPage, ExceptsRequest};
pub use file::{FileType, ManualFile};
pub use index::{ListedFile, ManualIndex};
pub use lines::LineSpan;
pub use node::{Node, NodeKind};
pub use read::{
    manual_read, Expand, ReadLimits, ReadOutput, ReadRequest, ReadScope, RequestedLimits,
    SNIPPET_CHARS,
};
pub use reference::ManualRef;
