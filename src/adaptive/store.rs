//! The statistics file at `ADAPTIVE_STATS_PATH`: one JSON record a line, appended, never
//! rewritten except to compact it.
//!
//! - **Writes** go through [`Root`]: each record is one locked, whole append, so two
//!   servers on one vault never interleave lines. Inside `VAULT_ROOT` (the default,
//!   `.system/adaptive_stats.jsonl`) the vault root is the [`Root`] and a missing
//!   `.system/` is created by the same link-refusing walk as any vault write; elsewhere
//!   the file's own folder is opened as the root.
//! - **Bounded**: past [`MAX_LINES`] lines or [`MAX_BYTES`] bytes the file is replaced
//!   (atomically, and only if no one appended meanwhile) by its newest records, at most
//!   [`KEEP_LINES`] lines and [`KEEP_BYTES`] bytes, so compaction runs once per about a
//!   thousand records rather than on every one. The newest tuning record is kept even
//!   when older than those, because the tuning state after a restart comes from it.
//! - **Tolerant**: a missing file reads as empty; a line that is not a record (cut short
//!   by a crash, edited by hand, from a newer version) is skipped, and compaction drops
//!   it. One warning per load says how many were skipped and where the first was (a
//!   gigabyte of junk once made gigabytes of warnings). A write never fails a search: the
//!   caller logs the error and carries on.
//! - **Read within a bound**: at most [`MAX_READ_BYTES`], the newest part of a larger
//!   file, which the server never writes (it compacts at [`MAX_BYTES`]); the next record
//!   compacts such a file down to what was read. So a huge file costs the server's start
//!   a bounded read, not minutes.

use std::io::{Read, Seek, SeekFrom};

use super::record::Record;
use crate::config::Config;
use crate::error::{ErrorCode, ToolError};
use crate::paths::{locate_file, RelPath, Root};

pub(crate) const MAX_LINES: usize = 5_000;
pub(crate) const MAX_BYTES: u64 = 4 * 1024 * 1024;
pub(crate) const KEEP_LINES: usize = 4_000;
pub(crate) const KEEP_BYTES: u64 = 3 * 1024 * 1024;
/// Twice the compaction bound: a file the server wrote, even one that another process
/// appended to meanwhile, is read whole (with its oldest tuning record).
pub(crate) const MAX_READ_BYTES: u64 = 2 * MAX_BYTES;

/// What this process knows of the file's size, to decide on compaction without reading
/// it for every record. Another process's appends are noticed at the next compaction.
#[derive(Debug, Clone, Copy)]
struct Size {
    lines: usize,
    bytes: u64,
    /// A crash can leave a last line without its newline; the next record must not be
    /// glued onto it.
    ends_mid_line: bool,
}

impl Size {
    /// The size of `contents`, counted in bytes of the whole file (so that a file read
    /// only in part is compacted at the next record).
    fn of(contents: &Contents) -> Size {
        let text = &contents.text;
        Size {
            lines: text
                .split(|&b| b == b'\n')
                .filter(|l| !l.is_empty())
                .count(),
            bytes: contents.file_bytes,
            ends_mid_line: text.last().is_some_and(|&b| b != b'\n'),
        }
    }

    fn over_bound(&self) -> bool {
        self.lines > MAX_LINES || self.bytes > MAX_BYTES
    }
}

pub(crate) struct StatsFile {
    root: Root,
    rel: RelPath,
    size: Option<Size>,
}

impl StatsFile {
    /// Opens the folder that holds the statistics file; creates nothing. The error names
    /// the setting, never the server path.
    pub(crate) fn locate(config: &Config) -> Result<StatsFile, String> {
        let located = locate_file(
            &config.adaptive_stats_path,
            &config.vault_root,
            "ADAPTIVE_STATS_PATH",
        )?;
        Ok(StatsFile {
            root: located.root,
            rel: located.file,
            size: None,
        })
    }

    /// Every readable record, oldest first (none if the file does not exist yet), of the
    /// newest [`MAX_READ_BYTES`]; one warning if anything was left out.
    pub(crate) fn load(&mut self) -> Vec<Record> {
        match self.read_bytes() {
            Ok(contents) => {
                self.size = Some(Size::of(&contents));
                let (records, unreadable) = parse(&contents.text);
                if unreadable.lines > 0 || contents.skipped_bytes > 0 {
                    tracing::warn!(
                        unreadable_lines = unreadable.lines,
                        first_unreadable_line = unreadable.first_line,
                        skipped_bytes = contents.skipped_bytes,
                        file_bytes = contents.file_bytes,
                        "adaptive statistics: unreadable lines skipped (line numbers count from \
                         the first byte read); the next record compacts the file"
                    );
                }
                records
            }
            Err(error) => {
                tracing::warn!(
                    code = error.code.as_str(),
                    "adaptive statistics: the file cannot be read; starting without history"
                );
                Vec::new()
            }
        }
    }

    /// Appends one record as one line, then compacts if the file has grown past its bound.
    pub(crate) fn append(&mut self, record: &Record) -> Result<(), ToolError> {
        let size = match self.size {
            Some(size) => size,
            None => Size::of(&self.read_bytes()?),
        };
        if size.bytes == 0 {
            self.create_empty()?;
        }
        let mut line = if size.ends_mid_line {
            "\n".to_string()
        } else {
            String::new()
        };
        line.push_str(&serde_json::to_string(record).expect("records serialise"));
        line.push('\n');
        let appended = self.root.append(&self.rel, line.as_bytes());
        if appended.is_err() {
            // Measured again next time: the file may have been removed or replaced.
            self.size = None;
        }
        appended?;
        let size = Size {
            lines: size.lines + 1,
            bytes: size.bytes + line.len() as u64,
            ends_mid_line: false,
        };
        self.size = Some(size);
        if size.over_bound() {
            self.compact()?;
        }
        Ok(())
    }

    /// Creates the file (and, inside the vault, `.system/`); another process creating it
    /// first is as good.
    fn create_empty(&self) -> Result<(), ToolError> {
        match self.root.create_new(&self.rel, b"", true) {
            Err(error) if error.code != ErrorCode::Conflict => Err(error),
            _ => Ok(()),
        }
    }

    /// Replaces the file by its newest records, unless it changed since it was read (an
    /// append by another process: the next append here tries again).
    fn compact(&mut self) -> Result<(), ToolError> {
        let seen = self.root.stat(&self.rel)?;
        let compacted = compacted(&self.read_bytes()?.text);
        match self
            .root
            .replace(&self.rel, compacted.as_bytes(), Some(&seen))
        {
            Ok(_) => {
                self.size = Some(Size::of(&Contents::whole(compacted.into_bytes())));
                Ok(())
            }
            Err(error) if error.code == ErrorCode::Conflict => {
                self.size = None;
                Ok(())
            }
            Err(error) => Err(error),
        }
    }

    /// The file's newest [`MAX_READ_BYTES`] at most; nothing when it does not exist yet.
    fn read_bytes(&self) -> Result<Contents, ToolError> {
        match self.root.open_file(&self.rel) {
            Ok(file) => Contents::read(file)
                .map_err(|error| ToolError::new(ErrorCode::Conflict, error.to_string())),
            Err(error) if error.code == ErrorCode::NotFound => Ok(Contents::whole(Vec::new())),
            Err(error) => Err(error),
        }
    }
}

/// What was read of the file.
struct Contents {
    /// Whole lines (the last may lack its newline), the newest part of the file.
    text: Vec<u8>,
    file_bytes: u64,
    /// Bytes before `text` that were not read (or not whole lines).
    skipped_bytes: u64,
}

impl Contents {
    fn whole(text: Vec<u8>) -> Contents {
        Contents {
            file_bytes: text.len() as u64,
            text,
            skipped_bytes: 0,
        }
    }

    /// The newest [`MAX_READ_BYTES`] of `file`, starting at a line.
    fn read(mut file: std::fs::File) -> std::io::Result<Contents> {
        let file_bytes = file.metadata()?.len();
        let start = file_bytes.saturating_sub(MAX_READ_BYTES);
        file.seek(SeekFrom::Start(start))?;
        let mut text = Vec::new();
        file.take(MAX_READ_BYTES).read_to_end(&mut text)?;
        let mut skipped_bytes = start;
        if start > 0 {
            // The first line read is most likely a part of one.
            let cut = memchr::memchr(b'\n', &text).map_or(text.len(), |newline| newline + 1);
            text.drain(..cut);
            skipped_bytes += cut as u64;
        }
        Ok(Contents {
            text,
            file_bytes,
            skipped_bytes,
        })
    }
}

/// The lines that are not records, for the one warning a load gives.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Unreadable {
    lines: u64,
    /// 1-based, in the text read; `None` when every line is a record.
    first_line: Option<u64>,
}

/// The records of a statistics file's text, and what was skipped.
fn parse(text: &[u8]) -> (Vec<Record>, Unreadable) {
    let mut unreadable = Unreadable::default();
    let mut records = Vec::new();
    for (index, line) in text.split(|&b| b == b'\n').enumerate() {
        if line.is_empty() {
            continue;
        }
        match serde_json::from_slice::<Record>(line) {
            Ok(record) => records.push(record),
            Err(_) => {
                unreadable.lines += 1;
                unreadable.first_line.get_or_insert(index as u64 + 1);
            }
        }
    }
    (records, unreadable)
}

/// Each readable record with its line as written.
fn lines(text: &[u8]) -> impl Iterator<Item = (&[u8], Record)> {
    text.split(|&b| b == b'\n')
        .filter(|line| !line.is_empty())
        .filter_map(|line| Some((line, serde_json::from_slice::<Record>(line).ok()?)))
}

/// The newest lines within [`KEEP_LINES`] and [`KEEP_BYTES`], oldest first, preceded by
/// the newest tuning record if it fell outside them.
fn compacted(text: &[u8]) -> String {
    let readable: Vec<(&[u8], Record)> = lines(text).collect();
    let newest_tuning = readable
        .iter()
        .rposition(|(_, record)| matches!(record, Record::Tuning(_)));
    let mut kept_bytes = 0u64;
    let first_kept = readable
        .iter()
        .enumerate()
        .rev()
        .take(KEEP_LINES)
        .take_while(|(_, (line, _))| {
            kept_bytes += line.len() as u64 + 1;
            kept_bytes <= KEEP_BYTES
        })
        .last()
        .map_or(readable.len(), |(index, _)| index);
    let tuning_kept_apart = newest_tuning.filter(|&index| index < first_kept);
    let mut out = String::new();
    for (line, _) in tuning_kept_apart
        .map(|index| &readable[index])
        .into_iter()
        .chain(&readable[first_kept..])
    {
        out.push_str(&String::from_utf8_lossy(line));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adaptive::record::TuningReason;
    use crate::adaptive::record::TuningRecord;
    use crate::adaptive::test_support::{facts, find, DEFAULTS};
    use crate::adaptive::tuning::TuningState;

    fn text(records: &[Record]) -> String {
        records
            .iter()
            .map(|r| serde_json::to_string(r).unwrap() + "\n")
            .collect()
    }

    fn tuning(ts: u64) -> Record {
        Record::Tuning(TuningRecord {
            ts,
            reason: TuningReason::Policy,
            state: TuningState {
                thresholds: DEFAULTS,
                candidate_low_changed_at: Some(ts),
                file_bias_changed_at: None,
                rolled_back_at: None,
                rolled_back_from: None,
            },
        })
    }

    #[test]
    fn unreadable_lines_are_skipped() {
        let good = text(&[find(1, facts("a")), find(2, facts("b"))]);
        let (first, second) = good.split_at(good.find('\n').unwrap() + 1);
        let damaged =
            format!("{first}{{\"kind\":\"find\",\"ts\":\nnot json\n{second}{{\"kind\":\"fi");
        let (records, unreadable) = parse(damaged.as_bytes());
        assert_eq!(records, vec![find(1, facts("a")), find(2, facts("b"))]);
        assert_eq!(
            unreadable,
            Unreadable {
                lines: 3,
                first_line: Some(2)
            }
        );
    }

    #[test]
    fn compaction_keeps_the_newest_lines_and_the_last_tuning_record() {
        let mut records = vec![tuning(0)];
        records.extend((1..=KEEP_LINES as u64 + 50).map(|ts| find(ts, facts(&format!("t{ts}")))));
        let (kept, _) = parse(compacted(text(&records).as_bytes()).as_bytes());
        assert_eq!(kept.len(), KEEP_LINES + 1);
        assert_eq!(kept[0], tuning(0));
        assert_eq!(kept[1], find(51, facts("t51")));
        assert_eq!(kept.last(), records.last());
    }

    #[test]
    fn compaction_respects_the_byte_bound() {
        let records: Vec<Record> = (0..KEEP_LINES as u64)
            .map(|ts| find(ts, facts(&"x".repeat(1000))))
            .collect();
        let kept = compacted(text(&records).as_bytes());
        assert!(kept.len() as u64 <= KEEP_BYTES);
        assert!(kept.len() as u64 > KEEP_BYTES - 1000);
    }

    #[test]
    fn size_notices_a_line_cut_short() {
        let size = |text: &[u8]| Size::of(&Contents::whole(text.to_vec()));
        assert!(size(b"{}\n{\"ki").ends_mid_line);
        assert!(!size(b"{}\n").ends_mid_line);
        assert_eq!(size(b"a\n\nb\n").lines, 2);
    }

    #[test]
    fn a_file_over_the_read_bound_is_read_from_a_line_near_its_end() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("stats.jsonl");
        let record = serde_json::to_string(&find(7, facts("z"))).unwrap() + "\n";
        let filler = "x".repeat(99) + "\n";
        let mut text = filler.repeat((MAX_READ_BYTES / 100) as usize + 10);
        text.push_str(&record);
        std::fs::write(&path, &text).unwrap();
        let contents = Contents::read(std::fs::File::open(&path).unwrap()).unwrap();
        assert_eq!(contents.file_bytes, text.len() as u64);
        assert!(contents.text.len() as u64 <= MAX_READ_BYTES);
        assert!(contents.text.starts_with(filler.as_bytes()));
        assert_eq!(
            contents.skipped_bytes + contents.text.len() as u64,
            text.len() as u64
        );
        let (records, unreadable) = parse(&contents.text);
        assert_eq!(records, vec![find(7, facts("z"))]);
        assert!(unreadable.lines > 40_000);
        assert!(Size::of(&contents).over_bound());
    }
}
