//! Behaviour of the manual domain through its public API, on manual trees built in
//! temporary folders (and, when present, on the shared benchmark corpus).

#[path = "manual_tests/bench_corpus.rs"]
mod bench_corpus;
#[path = "manual_tests/catalog.rs"]
mod catalog;
#[path = "manual_tests/excepts.rs"]
mod excepts;
#[path = "manual_tests/fixture.rs"]
mod fixture;
#[path = "manual_tests/read.rs"]
mod read;
#[path = "manual_tests/refresh.rs"]
mod refresh;
#[path = "manual_tests/sections.rs"]
mod sections;
