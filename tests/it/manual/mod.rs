//! Behaviour of the manual domain through its public API, on manual trees built in
//! temporary folders (and, when present, on the shared benchmark corpus).

mod bench_corpus;
mod catalog;
mod excepts;
mod fixture;
mod index_kill;
mod read;
mod refresh;
mod sections;
