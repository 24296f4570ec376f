//! Wall-clock time as the server needs it: RFC 3339 stamps for logs and the calendar date
//! that names today's daily log. Kept apart so tests can reason about dates without a
//! date-time crate.

use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds since the Unix epoch, now.
pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// `(year, month, day)` of a day count since 1970-01-01 (proleptic Gregorian; Howard
/// Hinnant's days-to-civil algorithm).
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

/// `YYYY-MM-DD` (UTC) of a Unix time.
pub fn date(unix_seconds: u64) -> String {
    let (y, m, d) = civil_from_days((unix_seconds / 86_400) as i64);
    format!("{y:04}-{m:02}-{d:02}")
}

/// `YYYY-MM-DDThh:mm:ssZ` of a Unix time.
pub fn rfc3339(unix_seconds: u64) -> String {
    let secs = unix_seconds % 86_400;
    format!(
        "{}T{:02}:{:02}:{:02}Z",
        date(unix_seconds),
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

/// Whether `year-month-day` is a real calendar date (leap years included).
pub fn is_calendar_date(year: i64, month: u32, day: u32) -> bool {
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let days_in_month = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days_in_month).contains(&day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_known_instants() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_795_647_599), "2026-11-25T22:59:59Z");
    }

    #[test]
    fn knows_calendar_dates() {
        assert!(is_calendar_date(2024, 2, 29));
        assert!(!is_calendar_date(2026, 2, 29));
        assert!(!is_calendar_date(1900, 2, 29));
        assert!(is_calendar_date(2000, 2, 29));
        assert!(!is_calendar_date(2026, 4, 31));
        assert!(!is_calendar_date(2026, 13, 1));
    }
}
