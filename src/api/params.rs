//! Request parameters, decoded the way Zulip clients send them.
//!
//! Like Zulip's request variables: the query string, for every method, and
//! a body that is `application/x-www-form-urlencoded` or
//! `multipart/form-data`; the body wins when both name a variable. Each value is text: a plain
//! string arrives bare (`to=general`), while lists, objects, booleans and
//! integers arrive JSON-encoded (`to=[1,2]`, `apply_markdown=true`). The
//! typed getters accept both where Zulip does. Every getter marks its
//! parameter as used; the rest are reported back to the client in
//! `ignored_parameters_unsupported`.

use serde_json::Value;

use crate::error::{ApiError, ApiResult};

/// Deepest JSON nesting accepted in a parameter: decoding is recursive and
/// coroutine stacks are small, and no Zulip parameter nests deeper than a
/// few levels.
pub const MAX_JSON_DEPTH: usize = 16;

/// The decoded parameters of one request, in arrival order (a repeated
/// name counts with its last value), each with a mark (asked for yet), so
/// a getter allocates nothing. Every name and value lives in one text
/// buffer: a request has a handful of parameters, and this is two
/// allocations where a map of strings was three per parameter. A lookup
/// scans from the end, comparing lengths first. Past `SORT_PAST`
/// parameters (a body can send thousands, or one name thousands of times)
/// they are sorted by name with one entry per name, and looked up by
/// binary search, so no body makes a handler's lookups slow.
#[derive(Debug, Default)]
pub struct Params {
    text: String,
    entries: Vec<Entry>,
    /// `entries` is sorted by name, one per name.
    sorted: bool,
    /// Where `%XX`-encoded names and values are decoded before they are
    /// copied into `text`; kept with the rest for `reuse`.
    scratch: (Vec<u8>, Vec<u8>),
    /// The raw body and headers of a request to a route that reads them
    /// itself (the incoming webhooks, `/external/{integration}`).
    payload: Option<Payload>,
}

/// A webhook request as its sender wrote it: the body (when it is not a
/// form, which is decoded into parameters as usual) and every header.
#[derive(Debug, Default)]
pub struct Payload {
    /// The body, unless it was a form.
    pub body: Vec<u8>,
    /// Every header, names as sent.
    pub headers: Vec<(String, String)>,
}

impl Payload {
    /// The first header named `name` (compared case-insensitively).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// Most parameters kept in arrival order; see `Params`.
const SORT_PAST: usize = 32;

/// A parameter: where its name and value are in `Params::text`.
#[derive(Debug, Clone, Copy)]
struct Entry {
    name: (usize, usize),
    value: (usize, usize),
    used: bool,
}

impl Params {
    /// Decodes `a=1&b=2` pairs (a query string or a form body) on top of
    /// what is already there; a repeated key keeps its last value.
    pub fn add_urlencoded(&mut self, raw: &[u8]) {
        if raw.is_empty() {
            return;
        }
        // Room for all of it at once (decoding never makes text longer).
        self.text.reserve(raw.len());
        let mut scratch = std::mem::take(&mut self.scratch);
        decode_form(raw, &mut scratch, |name, value| self.push(name, value));
        self.scratch = scratch;
        self.settle();
    }

    /// Empties these parameters for the next request of a connection,
    /// keeping their buffers (the text, the entries, the decoding scratch)
    /// so that the request allocates none of them — unless they grew past
    /// `REUSE_AT_MOST` bytes, which a large body should not pin for the
    /// rest of its connection.
    pub fn reuse(&mut self) {
        const REUSE_AT_MOST: usize = 16 * 1024;
        let held = self.text.capacity() + self.scratch.0.capacity() + self.scratch.1.capacity();
        if held + self.entries.capacity() * std::mem::size_of::<Entry>() > REUSE_AT_MOST {
            *self = Params::default();
            return;
        }
        self.text.clear();
        self.entries.clear();
        self.sorted = false;
        self.payload = None;
    }

    /// Keeps the request's raw body and headers for the handler.
    pub fn set_payload(&mut self, payload: Payload) {
        self.payload = Some(payload);
    }

    /// The request's raw body and headers, on the routes that keep them.
    pub fn take_payload(&mut self) -> Option<Payload> {
        self.payload.take()
    }

    /// Adds decoded (name, value) pairs, e.g. multipart text parts; a
    /// repeated name keeps its last value.
    pub fn add_pairs(&mut self, pairs: impl IntoIterator<Item = (String, String)>) {
        for (name, value) in pairs {
            self.push(&name, &value);
        }
        self.settle();
    }

    /// Parameters from literal pairs (tests, internal callers).
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let mut p = Params::default();
        for (name, value) in pairs {
            p.push(name, value);
        }
        p.settle();
        p
    }

    /// Appends a parameter.
    fn push(&mut self, name: &str, value: &str) {
        let mut span = |text: &str| {
            let start = self.text.len();
            self.text.push_str(text);
            (start, self.text.len())
        };
        let entry = Entry { name: span(name), value: span(value), used: false };
        self.entries.push(entry);
    }

    fn at(&self, (start, end): (usize, usize)) -> &str {
        &self.text[start..end]
    }

    /// Once there are more than `SORT_PAST` entries (or they were sorted
    /// before): sorts them by name and keeps the last of each name. The
    /// sort is stable, so a name's entries stay in arrival order.
    fn settle(&mut self) {
        if !self.sorted && self.entries.len() <= SORT_PAST {
            return;
        }
        let mut entries = std::mem::take(&mut self.entries);
        entries.sort_by(|a, b| self.at(a.name).cmp(self.at(b.name)));
        let mut kept: Vec<Entry> = Vec::with_capacity(entries.len());
        for entry in entries {
            match kept.last_mut() {
                Some(last) if self.at(last.name) == self.at(entry.name) => *last = entry,
                _ => kept.push(entry),
            }
        }
        self.entries = kept;
        self.sorted = true;
    }

    /// The raw text of a parameter (its last value), marking it used.
    pub fn raw(&mut self, name: &str) -> Option<&str> {
        let text = &self.text;
        let named = |e: &Entry| &text[e.name.0..e.name.1];
        let found = if self.sorted {
            let at = self.entries.binary_search_by(|e| named(e).cmp(name)).ok()?;
            &mut self.entries[at]
        } else {
            self.entries
                .iter_mut()
                .rev()
                .find(|e| e.name.1 - e.name.0 == name.len() && named(e) == name)?
        };
        found.used = true;
        Some(&text[found.value.0..found.value.1])
    }

    /// A string parameter: the bare text.
    pub fn string(&mut self, name: &str) -> Option<String> {
        self.raw(name).map(str::to_owned)
    }

    /// A required string parameter.
    pub fn required_string(&mut self, name: &str) -> ApiResult<String> {
        self.string(name).ok_or_else(|| ApiError::missing(name))
    }

    /// A boolean: `true`/`false` (JSON), also `True`/`False`, `1`/`0`.
    pub fn bool(&mut self, name: &str) -> ApiResult<Option<bool>> {
        let Some(raw) = self.raw(name) else { return Ok(None) };
        match raw.trim() {
            "true" | "True" | "1" => Ok(Some(true)),
            "false" | "False" | "0" => Ok(Some(false)),
            _ => Err(ApiError::invalid(name, "not a boolean")),
        }
    }

    /// A boolean with a default.
    pub fn bool_or(&mut self, name: &str, default: bool) -> ApiResult<bool> {
        Ok(self.bool(name)?.unwrap_or(default))
    }

    /// An integer (bare or JSON).
    pub fn int(&mut self, name: &str) -> ApiResult<Option<i64>> {
        let Some(raw) = self.raw(name) else { return Ok(None) };
        raw.trim().parse::<i64>().map(Some).map_err(|_| ApiError::invalid(name, "not an integer"))
    }

    /// A JSON value, or `Value::String` of the bare text when the text is
    /// not JSON (so `to=general` and `to="general"` both mean "general").
    pub fn json_or_string(&mut self, name: &str) -> ApiResult<Option<Value>> {
        let Some(raw) = self.raw(name) else { return Ok(None) };
        let raw = raw.to_owned();
        let trimmed = raw.trim_start();
        if trimmed.starts_with('[') || trimmed.starts_with('{') {
            return parse_json(name, &raw).map(Some);
        }
        Ok(Some(serde_json::from_str::<Value>(&raw).unwrap_or(Value::String(raw))))
    }

    /// A parameter that must be JSON.
    pub fn json(&mut self, name: &str) -> ApiResult<Option<Value>> {
        let Some(raw) = self.raw(name) else { return Ok(None) };
        let raw = raw.to_owned();
        parse_json(name, &raw).map(Some)
    }

    /// Names of parameters no getter asked for, sorted, each once (a name
    /// sent twice was asked for if its last value was).
    pub fn unused(&self) -> Vec<String> {
        if self.entries.iter().all(|e| e.used) {
            return Vec::new();
        }
        let used: Vec<&str> =
            self.entries.iter().filter(|e| e.used).map(|e| self.at(e.name)).collect();
        let mut unused: Vec<&str> = self
            .entries
            .iter()
            .map(|e| self.at(e.name))
            .filter(|name| !used.contains(name))
            .collect();
        unused.sort_unstable();
        unused.dedup();
        unused.into_iter().map(str::to_owned).collect()
    }
}

/// Calls `each` with every (name, value) pair of
/// `application/x-www-form-urlencoded` bytes, decoded as the URL
/// standard's parser does (and the `form_urlencoded` crate, which the
/// tests compare against): pairs split on `&`, empty ones skipped; the
/// name ends at the first `=` (no `=`: an empty value); `+` is a space and
/// `%XX` a byte, a `%` without two hex digits is itself; bytes that are
/// not UTF-8 become U+FFFD.
///
/// Written here because it is on every request's path: the crate makes
/// several passes and a copy or two per name and value (about a sixth of
/// the user-space instructions of a `POST /messages`), where a name or
/// value without `%` or `+` — most of them — is passed on in place, and
/// needs no UTF-8 check of its own when the whole body is valid UTF-8.
/// One plain pass over the bytes finds every `&`, each pair's first `=`
/// and whether its name and value hold a `%` or `+`: a form's pieces are
/// a few bytes long, and a vectorized search per piece (`memchr`) cost
/// more in setting up than it saved — and in a message's text every
/// sixth byte or so is a `+` anyway.
fn decode_form(
    raw: &[u8],
    (name_buf, value_buf): &mut (Vec<u8>, Vec<u8>),
    mut each: impl FnMut(&str, &str),
) {
    // One UTF-8 check for the whole body: the pieces are split at ASCII
    // bytes, so a piece without `%` is then valid text as it stands.
    let text = std::str::from_utf8(raw).ok();
    let mut pair = Pair::starting_at(0);
    let mut emit = |pair: &Pair, end: usize| {
        if end == pair.start {
            return;
        }
        let (name, value) = match pair.eq {
            Some(eq) => (pair.start..eq, eq + 1..end),
            None => (pair.start..end, end..end),
        };
        let name = form_text(raw, text, name, pair.name_encoded, name_buf);
        let value = form_text(raw, text, value, pair.value_encoded, value_buf);
        each(&name, &value);
    };
    for (at, &byte) in raw.iter().enumerate() {
        match byte {
            b'&' => {
                emit(&pair, at);
                pair = Pair::starting_at(at + 1);
            }
            b'=' if pair.eq.is_none() => pair.eq = Some(at),
            b'%' | b'+' if pair.eq.is_none() => pair.name_encoded = true,
            b'%' | b'+' => pair.value_encoded = true,
            _ => {}
        }
    }
    emit(&pair, raw.len());
}

/// Where `decode_form` is in the current pair.
struct Pair {
    start: usize,
    /// The pair's first `=`, once seen.
    eq: Option<usize>,
    name_encoded: bool,
    value_encoded: bool,
}

impl Pair {
    fn starting_at(start: usize) -> Self {
        Pair { start, eq: None, name_encoded: false, value_encoded: false }
    }
}

/// One name or value of a form (`raw[range]`) as text: when `encoded` (it
/// holds `%` or `+`), `+` → space and `%XX` → the byte, into `scratch`;
/// then UTF-8, lossy. `text` is all of `raw` when it is valid UTF-8: a
/// piece that is not `encoded` is then borrowed from it without a check
/// of its own.
fn form_text<'a>(
    raw: &'a [u8],
    text: Option<&'a str>,
    range: std::ops::Range<usize>,
    encoded: bool,
    scratch: &'a mut Vec<u8>,
) -> std::borrow::Cow<'a, str> {
    use std::borrow::Cow;
    if let (Some(text), false) = (text, encoded) {
        return Cow::Borrowed(&text[range]);
    }
    let bytes = &raw[range];
    let bytes = if encoded {
        let hex = |b: Option<&u8>| match b? {
            b @ b'0'..=b'9' => Some(b - b'0'),
            b @ b'a'..=b'f' => Some(b - b'a' + 10),
            b @ b'A'..=b'F' => Some(b - b'A' + 10),
            _ => None,
        };
        scratch.clear();
        scratch.reserve(bytes.len());
        let mut at = 0;
        while let Some(&byte) = bytes.get(at) {
            let (byte, len) = match byte {
                b'+' => (b' ', 1),
                b'%' => match hex(bytes.get(at + 1)).zip(hex(bytes.get(at + 2))) {
                    Some((high, low)) => (high << 4 | low, 3),
                    None => (b'%', 1),
                },
                byte => (byte, 1),
            };
            scratch.push(byte);
            at += len;
        }
        &scratch[..]
    } else {
        bytes
    };
    match std::str::from_utf8(bytes) {
        Ok(text) => Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

/// Parses JSON after checking its nesting depth without recursion.
fn parse_json(name: &str, raw: &str) -> ApiResult<Value> {
    if json_depth(raw) > MAX_JSON_DEPTH {
        return Err(ApiError::bad_request(format!(
            "Argument \"{name}\" is nested more than {MAX_JSON_DEPTH} levels deep"
        ))
        .with("var_name", name));
    }
    serde_json::from_str(raw).map_err(|_| ApiError::invalid_json(name))
}

/// The maximum bracket nesting of JSON text (strings skipped); an upper
/// bound on what serde_json would recurse into.
pub fn json_depth(raw: &str) -> usize {
    let (mut depth, mut max, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for b in raw.bytes() {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                max = max.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_and_json_values() {
        let mut p = Params::default();
        p.add_urlencoded(b"to=general&ids=%5B1%2C2%5D&flag=true&n=5&q=%22quoted%22&extra=1");
        assert_eq!(p.json_or_string("to").unwrap(), Some(Value::String("general".into())));
        assert_eq!(p.json_or_string("ids").unwrap(), Some(serde_json::json!([1, 2])));
        assert_eq!(p.bool("flag").unwrap(), Some(true));
        assert_eq!(p.int("n").unwrap(), Some(5));
        assert_eq!(p.json_or_string("q").unwrap(), Some(Value::String("quoted".into())));
        assert_eq!(p.unused(), vec!["extra".to_owned()]);
    }

    #[test]
    fn repeated_names_keep_the_last_value_and_the_body_wins() {
        let mut p = Params::default();
        p.add_urlencoded(b"b=query&a=1&a=2");
        p.add_urlencoded(b"b=body&c=3&a=4&a=5");
        assert_eq!(p.raw("a"), Some("5"));
        assert_eq!(p.raw("b"), Some("body"));
        assert_eq!(p.unused(), vec!["c".to_owned()]);
        assert_eq!(p.raw("missing"), None);
        let mut q = Params::from_pairs([("x", "1"), ("x", "2")]);
        assert_eq!(q.raw("x"), Some("2"));
    }

    /// Past `SORT_PAST` parameters the list is sorted and deduplicated,
    /// with the same answers: the last value wins, the body over the
    /// query, and each unused name is reported once.
    #[test]
    fn many_parameters_are_sorted_with_the_same_answers() {
        let mut p = Params::default();
        let query: String = (0..40).map(|i| format!("n{i}=q{i}&")).collect();
        p.add_urlencoded(format!("{query}dup=1&dup=2").as_bytes());
        assert!(p.sorted);
        assert_eq!(p.entries.len(), 41);
        p.add_urlencoded(b"n7=body&dup=3&late=x");
        assert_eq!(p.raw("n7"), Some("body"));
        assert_eq!(p.raw("n8"), Some("q8"));
        assert_eq!(p.raw("dup"), Some("3"));
        assert_eq!(p.raw("late"), Some("x"));
        assert_eq!(p.raw("n40"), None);
        let unused = p.unused();
        assert_eq!(unused.len(), 38);
        assert!(unused.windows(2).all(|w| w[0] < w[1]) && !unused.contains(&"n7".to_owned()));
        // One name many times is one entry.
        let mut one = Params::default();
        one.add_urlencoded("a=1&".repeat(10_000).as_bytes());
        assert_eq!((one.entries.len(), one.raw("a")), (1, Some("1")));
    }

    /// A connection's parameters reused for its next request hold only
    /// that request's, none of the one before (names, values, marks,
    /// sorting); buffers grown past the bound are let go.
    #[test]
    fn reused_params_forget_the_request_before() {
        let mut params = Params::default();
        params.add_urlencoded(b"to=general&content=a%2Bb&secret=1");
        assert_eq!(params.raw("content"), Some("a+b"));
        params.reuse();
        params.add_urlencoded(b"content=c%20d&type=stream");
        assert_eq!(params.raw("to"), None);
        assert_eq!(params.raw("secret"), None);
        assert_eq!(params.raw("content"), Some("c d"));
        assert_eq!(params.unused(), ["type"]);
        // A sorted (large) request, then a small one: kept in arrival
        // order again, its last value counting.
        params.reuse();
        params.add_urlencoded("k=1&".repeat(SORT_PAST + 1).as_bytes());
        assert!(params.sorted);
        params.reuse();
        params.add_urlencoded(b"z=1&a=2&z=3");
        assert!(!params.sorted);
        assert_eq!(params.raw("z"), Some("3"));
        assert_eq!(params.unused(), ["a"]);
        // A large body's buffers are not pinned to the connection.
        params.reuse();
        params.add_urlencoded(format!("big={}", "x".repeat(64 * 1024)).as_bytes());
        params.reuse();
        assert_eq!(params.text.capacity(), 0);
    }

    /// The decoder against the `form_urlencoded` crate, on tricky cases
    /// and on many pseudo-random byte strings drawn from the characters
    /// that matter (`%`, `+`, `=`, `&`, hex digits, non-UTF-8 bytes).
    #[test]
    fn decodes_forms_as_the_url_standard_does() {
        let crate_pairs = |raw: &[u8]| -> Vec<(String, String)> {
            form_urlencoded::parse(raw).map(|(k, v)| (k.into_owned(), v.into_owned())).collect()
        };
        // One scratch for every case, as a connection's `Params` keeps it:
        // what an earlier body decoded there must not leak into the next.
        let mut scratch = (Vec::new(), Vec::new());
        let mut urlencoded_pairs = |raw: &[u8]| -> Vec<(String, String)> {
            let mut pairs = Vec::new();
            decode_form(raw, &mut scratch, |k, v| pairs.push((k.to_owned(), v.to_owned())));
            pairs
        };
        let cases: [&[u8]; 14] = [
            b"",
            b"&&",
            b"a",
            b"a=",
            b"=b",
            b"a=b=c",
            b"a+b=c+d",
            b"%41%4a%4A=%2B%26%3D",
            b"a=%",
            b"a=%4",
            b"a=%zz%4g",
            b"a=%e2%82%ac&b=\xe2\x82",
            b"n=\xff\xfe&m=%ff",
            b"content=load+test+message&to=general&type=stream",
        ];
        for raw in cases {
            assert_eq!(urlencoded_pairs(raw), crate_pairs(raw), "{raw:?}");
        }
        let alphabet = b"%+=&aZ09fF\xc3\xa9\xff ";
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        // xorshift64: the next pseudo-random number below `n`.
        let mut next = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        // Short strings, and long ones (past the vectorized searches' blocks).
        for round in 0..22_000 {
            let len = if round < 20_000 { next(24) } else { next(300) };
            let raw: Vec<u8> = (0..len).map(|_| alphabet[next(alphabet.len())]).collect();
            assert_eq!(urlencoded_pairs(&raw), crate_pairs(&raw), "{raw:?}");
        }
    }

    #[test]
    fn refuses_bad_types_and_deep_json() {
        let mut p = Params::from_pairs([
            ("b", "yes"),
            ("n", "x"),
            ("j", "[1,"),
            ("d", "[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]"),
        ]);
        assert_eq!(p.bool("b").unwrap_err().code, "BAD_REQUEST");
        assert_eq!(p.int("n").unwrap_err().code, "BAD_REQUEST");
        assert_eq!(p.json("j").unwrap_err().code, "INVALID_JSON");
        assert!(p.json("d").unwrap_err().msg.contains("nested"));
        assert_eq!(json_depth(r#"["[[[", {"a": [1]}]"#), 3);
    }
}
