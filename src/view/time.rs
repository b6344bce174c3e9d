//! Dates as Zulip writes them.

/// UNIX seconds → `YYYY-MM-DDTHH:MM:SS+00:00` (proleptic Gregorian, UTC).
pub fn iso8601(secs: i64) -> String {
    Iso8601(secs).to_string()
}

/// `iso8601` as a `Display`, to write a date without allocating.
pub struct Iso8601(pub i64);

impl Iso8601 {
    /// (year, month, day, hour, minute, second) in UTC.
    fn parts(&self) -> (i64, i64, i64, i64, i64, i64) {
        let secs = self.0;
        let days = secs.div_euclid(86_400);
        let rem = secs.rem_euclid(86_400);
        // Civil-from-days (Howard Hinnant's algorithm).
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z.rem_euclid(146_097);
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = doy - (153 * mp + 2) / 5 + 1;
        let month = if mp < 10 { mp + 3 } else { mp - 9 };
        let year = yoe + era * 400 + i64::from(month <= 2);
        (year, month, day, rem / 3600, rem % 3600 / 60, rem % 60)
    }

    /// Appends the same text as `Display` to `out`, digit by digit: the
    /// formatting machinery was a few thousand instructions per date.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        let (year, month, day, hour, minute, second) = self.parts();
        if !(0..=9999).contains(&year) {
            use std::io::Write;
            let _ = write!(out, "{self}");
            return;
        }
        let two = |out: &mut Vec<u8>, n: i64| {
            out.push(b'0' + (n / 10) as u8);
            out.push(b'0' + (n % 10) as u8);
        };
        two(out, year / 100);
        two(out, year % 100);
        out.push(b'-');
        two(out, month);
        out.push(b'-');
        two(out, day);
        out.push(b'T');
        two(out, hour);
        out.push(b':');
        two(out, minute);
        out.push(b':');
        two(out, second);
        out.extend_from_slice(b"+00:00");
    }
}

impl std::fmt::Display for Iso8601 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (year, month, day, hour, minute, second) = self.parts();
        write!(f, "{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}+00:00")
    }
}

#[cfg(test)]
mod tests {
    use super::iso8601;

    #[test]
    fn formats_dates() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00+00:00");
        assert_eq!(iso8601(951_782_400), "2000-02-29T00:00:00+00:00");
        assert_eq!(iso8601(1_700_000_000), "2023-11-14T22:13:20+00:00");
    }
}
