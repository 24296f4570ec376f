//! Defects found under load, faults and hostile input (issue 12), one module a concern:
//! each test failed before its fix. Tests that kill a process are bounded in count and
//! time.

mod crash_append;
mod glob;
mod inputs;
mod jsonrpc;
mod logs;
mod replace_race;
mod stats_file;
mod temp_files;
