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
pub(crate) fn civil_from_days(days: i64) -> (i64, u32, u32) {
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
pub(crate) fn rfc3339(unix_seconds: u64) -> String {
    let secs = unix_seconds % 86_400;
    format!(
        "{}T{:02}:{:02}:{:02}Z",
        date(unix_seconds),
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

/// Milliseconds since the Unix epoch, now.
pub(crate) fn now_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// `YYYY-MM-DDThh:mm:ss.mmmZ` of a Unix time in milliseconds (before 1970 reads as 1970).
pub(crate) fn rfc3339_millis(unix_millis: i64) -> String {
    let millis = unix_millis.max(0) as u64;
    let seconds = rfc3339(millis / 1000);
    format!("{}.{:03}Z", seconds.trim_end_matches('Z'), millis % 1000)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (the inverse of
/// [`civil_from_days`]).
pub(crate) fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let yoe = year.rem_euclid(400);
    let shifted_month = i64::from((month + 9) % 12);
    let doy = (153 * shifted_month + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Milliseconds since the Unix epoch of an RFC 3339 date-time (`2026-11-20T09:00:00Z`,
/// `2026-11-20T18:00:00.5+09:00`); `None` when it is not one.
pub(crate) fn parse_rfc3339(text: &str) -> Option<i64> {
    let bytes = text.as_bytes();
    let digits = |range: std::ops::Range<usize>| -> Option<i64> {
        let part = text.get(range)?;
        part.bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| part.parse().ok())?
    };
    if bytes.len() < 20 || bytes[4] != b'-' || bytes[7] != b'-' || bytes[13] != b':' {
        return None;
    }
    if !matches!(bytes[10], b'T' | b't' | b' ') || bytes[16] != b':' {
        return None;
    }
    let (year, month, day) = (digits(0..4)?, digits(5..7)?, digits(8..10)?);
    let (hour, minute, second) = (digits(11..13)?, digits(14..16)?, digits(17..19)?);
    if !is_calendar_date(year, month as u32, day as u32) || hour > 23 || minute > 59 || second > 60
    {
        return None;
    }
    let mut rest = &text[19..];
    let mut millis = 0;
    if let Some(fraction) = rest.strip_prefix('.') {
        let end = fraction
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(fraction.len());
        if end == 0 {
            return None;
        }
        let padded = format!("{:0<3}", &fraction[..end.min(3)]);
        millis = padded.parse::<i64>().ok()?;
        rest = &fraction[end..];
    }
    let offset_minutes = match rest {
        "Z" | "z" => 0,
        _ if rest.len() == 6 && rest.as_bytes()[3] == b':' => {
            let sign = match rest.as_bytes()[0] {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let hours: i64 = rest.get(1..3)?.parse().ok()?;
            let minutes: i64 = rest.get(4..6)?.parse().ok()?;
            sign * (hours * 60 + minutes)
        }
        _ => return None,
    };
    let days = days_from_civil(year, month as u32, day as u32);
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset_minutes * 60;
    Some(seconds * 1000 + millis)
}

/// Whether `year-month-day` is a real calendar date (leap years included).
pub(crate) fn is_calendar_date(year: i64, month: u32, day: u32) -> bool {
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
    fn parses_and_formats_milliseconds() {
        assert_eq!(
            rfc3339_millis(1_795_647_599_123),
            "2026-11-25T22:59:59.123Z"
        );
        assert_eq!(
            parse_rfc3339("2026-11-25T22:59:59.123Z"),
            Some(1_795_647_599_123)
        );
        assert_eq!(
            parse_rfc3339("2026-11-26T07:59:59+09:00"),
            Some(1_795_647_599_000)
        );
        assert_eq!(
            parse_rfc3339("2000-02-29T00:00:00.5Z"),
            Some(951_782_400_500)
        );
        for bad in [
            "2026-02-30T00:00:00Z",
            "2026-11-25",
            "2026-11-25T22:59:59",
            "x",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
        for days in [-1000, 0, 11_016, 20_417, 100_000] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
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
