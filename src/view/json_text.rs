//! A reply written straight to JSON text instead of a `serde_json` map, for
//! hot read paths (`GET /users/me`).
//!
//! A handler's `Reply` is a `serde_json::Map`, which (without serde_json's
//! `preserve_order`) is a `BTreeMap`: every reply's members come out in key
//! order, with the envelope's `msg`, `result` and
//! `ignored_parameters_unsupported` sorted in among the handler's own.
//! Building that map costs an allocation per key and per value and a tree
//! insert per member, then a walk to serialize it — most of a small
//! request's instructions. `SortedMembers` is the same object written
//! directly: the handler appends its members in key order (checked in debug
//! builds), each start recorded, and a `reply` writes the envelope's own
//! members in where the map would have put them, so that it is the body as
//! it stands (`http::response::success_sorted`). The bytes are the map's
//! bytes (`users.rs` and this module's tests compare them).

/// An object's members as JSON text (`"k":v,"k2":v2`, no braces), in
/// ascending key order, with where each member starts.
///
/// A `reply` is the whole object a handler answers with: its text starts
/// with the `{`, and the envelope's `msg` and `result` are written in
/// their places as the handler's members go by, so that the object is the
/// reply body as it stands (`into_success_body`), without a copy or a merge.
#[derive(Debug)]
pub struct SortedMembers {
    text: Vec<u8>,
    starts: Vec<(&'static str, usize)>,
    /// Members given ahead (`insert`), each greater than every key
    /// written when it was given, in key order: written in their places
    /// as `member` passes them.
    pending: Vec<(&'static str, Vec<u8>)>,
    /// Members given after a greater key was written, merged in where
    /// they sort when the object is written.
    late: Vec<(&'static str, Vec<u8>)>,
    /// The envelope's members still to write: `ENVELOPE[envelope..]` (all
    /// of it for a `reply`, none otherwise).
    envelope: usize,
    /// The first byte of the least key still to write (`pending` or the
    /// envelope), `NOTHING_GIVEN` if none: a member whose key starts
    /// below it passes none of them, which one comparison tells.
    next_first: u16,
}

/// A success reply's own members, in key order.
const ENVELOPE: [(&str, &[u8]); 2] = [("msg", b"\"\""), ("result", b"\"success\"")];

/// `SortedMembers::next_first` when nothing is given ahead.
const NOTHING_GIVEN: u16 = 0x100;

impl Default for SortedMembers {
    fn default() -> Self {
        SortedMembers {
            text: Vec::new(),
            starts: Vec::new(),
            pending: Vec::new(),
            late: Vec::new(),
            envelope: ENVELOPE.len(),
            next_first: NOTHING_GIVEN,
        }
    }
}

impl SortedMembers {
    /// An empty object with room for `bytes` of members (and for about a
    /// member per 16 of them, 2 to 32).
    pub fn with_capacity(bytes: usize) -> Self {
        SortedMembers {
            text: Vec::with_capacity(bytes),
            starts: Vec::with_capacity((bytes / 16).clamp(2, 32)),
            ..SortedMembers::default()
        }
    }

    /// A handler's whole reply, with room for `bytes` of its own members:
    /// the success envelope's members come with it (see the type).
    pub fn reply(bytes: usize) -> Self {
        let mut reply = SortedMembers::with_capacity(bytes + 32);
        reply.text.push(b'{');
        reply.envelope = 0;
        reply.refresh();
        reply
    }

    /// Whether this is a handler's whole reply (`reply`).
    fn is_reply(&self) -> bool {
        self.text.first() == Some(&b'{')
    }

    /// Empties the object, keeping its buffers (not for a `reply`).
    pub fn clear(&mut self) {
        debug_assert!(!self.is_reply(), "a reply is written once");
        self.text.clear();
        self.starts.clear();
        self.pending.clear();
        self.late.clear();
        self.next_first = NOTHING_GIVEN;
    }

    /// Adds member `key` (not otherwise present) with `value` as JSON
    /// text, in any order: written in its place as the members after it
    /// are, or when the object is written. For a member or two around a
    /// shared writer's output.
    pub fn insert(&mut self, key: &'static str, value: Vec<u8>) {
        if self.starts.last().is_none_or(|(last, _)| *last < key) {
            let at = self.pending.partition_point(|(k, _)| *k < key);
            self.pending.insert(at, (key, value));
            self.refresh();
        } else {
            self.late.push((key, value));
        }
    }

    /// The least key given ahead and not written yet.
    fn next_given(&self) -> Option<&'static str> {
        let envelope = ENVELOPE.get(self.envelope).map(|(k, _)| *k);
        let pending = self.pending.first().map(|(k, _)| *k);
        match (envelope, pending) {
            (Some(e), Some(p)) => Some(e.min(p)),
            (e, p) => e.or(p),
        }
    }

    fn refresh(&mut self) {
        self.next_first = self.next_given().map_or(NOTHING_GIVEN, |k| u16::from(k.as_bytes()[0]));
    }

    /// Writes the members given ahead whose keys are below `key` (all of
    /// them for `None`).
    fn write_given(&mut self, key: Option<&str>) {
        while let Some(next) = self.next_given().filter(|next| key.is_none_or(|key| *next < key)) {
            if ENVELOPE.get(self.envelope).is_some_and(|(k, _)| *k == next) {
                let value = ENVELOPE[self.envelope].1;
                self.envelope += 1;
                self.start(next).extend_from_slice(value);
            } else {
                let (_, value) = self.pending.remove(0);
                self.start(next).extend_from_slice(&value);
            }
        }
        self.refresh();
    }

    /// Starts member `key` (greater than every key before it) and returns
    /// the buffer to write its value into, as JSON.
    pub fn member(&mut self, key: &'static str) -> &mut Vec<u8> {
        debug_assert!(
            self.starts.last().is_none_or(|(last, _)| *last < key),
            "members out of order: {key} after {:?}",
            self.starts.last()
        );
        if u16::from(key.as_bytes()[0]) >= self.next_first {
            self.write_given(Some(key));
        }
        self.start(key)
    }

    /// Writes the separator and `"key":` of the next member.
    fn start(&mut self, key: &'static str) -> &mut Vec<u8> {
        if self.text.len() > usize::from(self.is_reply()) {
            self.text.push(b',');
        }
        self.starts.push((key, self.text.len()));
        // Keys are the handler's own identifiers: nothing to escape.
        debug_assert!(!needs_escape(key.as_bytes()));
        self.text.push(b'"');
        self.text.extend_from_slice(key.as_bytes());
        self.text.extend_from_slice(b"\":");
        &mut self.text
    }

    /// The object as a success body, with the parameters the handler
    /// ignored (`ignored_parameters_unsupported`, as JSON) if any. A
    /// `reply` whose remaining members can all go at its end is its own
    /// text, closed; otherwise (a member that sorts before one already
    /// written, or an object staged without the envelope) it is written
    /// out with the rest merged in (`write_object`).
    pub fn into_success_body(mut self, ignored: Option<Vec<u8>>) -> Vec<u8> {
        if let Some(ignored) = ignored {
            self.insert("ignored_parameters_unsupported", ignored);
        }
        if !self.is_reply() || !self.late.is_empty() {
            let envelope = if self.is_reply() { &[][..] } else { &ENVELOPE[..] };
            let mut body = Vec::new();
            self.write_object(&mut body, envelope);
            return body;
        }
        self.write_given(None);
        self.text.push(b'}');
        self.text
    }

    /// Member `key` with a string value, escaped as serde_json escapes it.
    pub fn string(&mut self, key: &'static str, value: &str) {
        string(self.member(key), value);
    }

    /// Member `key` with an unsigned integer value.
    pub fn unsigned(&mut self, key: &'static str, value: u64) {
        unsigned(self.member(key), value);
    }

    /// Member `key` with a boolean value.
    pub fn boolean(&mut self, key: &'static str, value: bool) {
        self.member(key).extend_from_slice(if value { b"true" } else { b"false" });
    }

    /// Member `key` with the value `null`.
    pub fn null(&mut self, key: &'static str) {
        self.member(key).extend_from_slice(b"null");
    }

    /// The members as a map: what the handler's reply holds for callers
    /// that run handlers directly (tests, benches), without the HTTP layer
    /// (and so without a `reply`'s envelope).
    pub fn to_map(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut text = Vec::new();
        self.write_object(&mut text, &[]);
        let mut map: serde_json::Map<String, serde_json::Value> =
            serde_json::from_slice(&text).expect("a sorted reply is a JSON object");
        if self.is_reply() {
            map.remove("msg");
            map.remove("result");
        }
        map
    }

    /// Writes the object `{…}` to `out` with `extra` members (none of them
    /// also one of this object's) each put where its key sorts, as a
    /// `BTreeMap` holding them all would serialize.
    pub fn write_object(&self, out: &mut Vec<u8>, extra: &[(&str, &[u8])]) {
        // `extra` (a staged object's envelope) comes sorted, and members
        // given but not written yet (a reply's envelope, `insert`) are
        // few: merged into a sorted copy only when needed, on the stack
        // when they are few.
        const FEW: usize = 8;
        let mut few: [(&str, &[u8]); FEW] = [("", &[]); FEW];
        let merged: Vec<(&str, &[u8])>;
        let envelope = &ENVELOPE[self.envelope..];
        let given = envelope.len() + self.pending.len() + self.late.len();
        let late = envelope
            .iter()
            .copied()
            .chain(self.pending.iter().chain(&self.late).map(|(k, v)| (*k, &v[..])));
        let extra = if given == 0 && extra.is_sorted_by_key(|(k, _)| *k) {
            extra
        } else if extra.len() + given <= FEW {
            let all = &mut few[..extra.len() + given];
            for (slot, member) in all.iter_mut().zip(extra.iter().copied().chain(late)) {
                *slot = member;
            }
            all.sort_unstable_by_key(|(k, _)| *k);
            &*all
        } else {
            let mut all = extra.to_vec();
            all.extend(late);
            all.sort_unstable_by_key(|(k, _)| *k);
            merged = all;
            &merged
        };
        let extra_bytes: usize = extra.iter().map(|(k, v)| k.len() + v.len() + 4).sum();
        out.reserve(self.text.len() + 2 + extra_bytes);
        out.push(b'{');
        let mut first = true;
        // Members [from, to) in one copy: the text between them already
        // holds their commas.
        let copy = |out: &mut Vec<u8>, from: usize, to: usize, first: &mut bool| {
            if from >= to {
                return;
            }
            if !*first {
                out.push(b',');
            }
            *first = false;
            let start = self.starts[from].1;
            let end = self.starts.get(to).map_or(self.text.len(), |(_, next)| next - 1);
            out.extend_from_slice(&self.text[start..end]);
        };
        let mut next = 0;
        for &(key, value) in extra {
            let at = next + self.starts[next..].partition_point(|(k, _)| *k < key);
            copy(out, next, at, &mut first);
            next = at;
            if !first {
                out.push(b',');
            }
            first = false;
            if !needs_escape(key.as_bytes()) {
                out.push(b'"');
                out.extend_from_slice(key.as_bytes());
                out.push(b'"');
            } else {
                string(out, key);
            }
            out.push(b':');
            out.extend_from_slice(value);
        }
        copy(out, next, self.starts.len(), &mut first);
        out.push(b'}');
    }
}

/// An object written straight into its output, members in ascending key
/// order, with a few `extra` members (JSON text) merged in where their keys
/// sort: the bytes of `SortedMembers::write_object` without a staging
/// buffer and its copy. For objects written many times per reply (a
/// message of `GET /messages`), where the staging's bookkeeping per member
/// was a fifth of the object's cost.
pub struct Object<'o, 'e> {
    out: &'o mut Vec<u8>,
    /// Sorted by key; `extra[next..]` are still to be written.
    extra: Vec<(&'e str, &'e [u8])>,
    next: usize,
    first: bool,
    #[cfg(debug_assertions)]
    last: &'static str,
}

impl<'o, 'e> Object<'o, 'e> {
    /// Opens the object (`{`) at the end of `out`.
    pub fn start(out: &'o mut Vec<u8>, extra: &[(&'e str, &'e [u8])]) -> Self {
        let mut extra = extra.to_vec();
        extra.sort_unstable_by_key(|(k, _)| *k);
        out.push(b'{');
        Object {
            out,
            extra,
            next: 0,
            first: true,
            #[cfg(debug_assertions)]
            last: "",
        }
    }

    /// Starts member `key` (greater than every key before it, and a plain
    /// identifier: nothing to escape) and returns the buffer to write its
    /// value into, as JSON.
    #[inline(always)]
    pub fn member(&mut self, key: &'static str) -> &mut Vec<u8> {
        #[cfg(debug_assertions)]
        {
            assert!(self.last < key, "members out of order: {key} after {}", self.last);
            assert!(!needs_escape(key.as_bytes()));
            self.last = key;
        }
        if self.next < self.extra.len() {
            self.extras_before(Some(key));
        }
        self.open(key);
        self.out.extend_from_slice(b"\":");
        self.out
    }

    /// Writes `,"key` (or `"key` first).
    #[inline(always)]
    fn open(&mut self, key: &str) {
        if self.first {
            self.first = false;
            self.out.push(b'"');
        } else {
            self.out.extend_from_slice(b",\"");
        }
        self.out.extend_from_slice(key.as_bytes());
    }

    /// Writes the extra members whose keys sort before `key` (all of the
    /// rest when `None`).
    #[cold]
    fn extras_before(&mut self, key: Option<&str>) {
        while let Some(&(k, value)) = self.extra.get(self.next) {
            if key.is_some_and(|key| k >= key) {
                break;
            }
            self.next += 1;
            if !needs_escape(k.as_bytes()) {
                self.open(k);
                self.out.push(b'"');
            } else {
                if !std::mem::take(&mut self.first) {
                    self.out.push(b',');
                }
                string(self.out, k);
            }
            self.out.push(b':');
            self.out.extend_from_slice(value);
        }
    }

    /// Member `key` with a string value, escaped as serde_json escapes it.
    pub fn string(&mut self, key: &'static str, value: &str) {
        string(self.member(key), value);
    }

    /// Member `key` with an unsigned integer value.
    pub fn unsigned(&mut self, key: &'static str, value: u64) {
        unsigned(self.member(key), value);
    }

    /// Member `key` with a boolean value.
    pub fn boolean(&mut self, key: &'static str, value: bool) {
        self.member(key).extend_from_slice(if value { b"true" } else { b"false" });
    }

    /// Closes the object (`}`), after any extra members still to come.
    pub fn finish(mut self) {
        if self.next < self.extra.len() {
            self.extras_before(None);
        }
        self.out.push(b'}');
    }
}

/// Appends the decimal digits of `value` (what serde_json writes for it),
/// without the formatting machinery.
pub fn unsigned(out: &mut Vec<u8>, value: u64) {
    let mut buffer = [0u8; 20];
    out.extend_from_slice(digits(value, &mut buffer));
}

/// The decimal digits of `value`, written into the end of `buffer`.
pub fn decimal(value: u64, buffer: &mut [u8; 20]) -> &str {
    std::str::from_utf8(digits(value, buffer)).expect("digits are ASCII")
}

/// "00" to "99", for writing two digits at a time.
const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// The decimal digits of `value` as bytes at the end of `buffer`, two at a
/// time (a division per pair instead of per digit).
fn digits(mut value: u64, buffer: &mut [u8; 20]) -> &[u8] {
    let mut at = buffer.len();
    while value >= 100 {
        let pair = (value % 100) as usize * 2;
        value /= 100;
        at -= 2;
        buffer[at..at + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    }
    if value >= 10 {
        let pair = value as usize * 2;
        at -= 2;
        buffer[at..at + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    } else {
        at -= 1;
        buffer[at] = b'0' + value as u8;
    }
    &buffer[at..]
}

/// Appends a JSON array of `items`, each written by `each`.
pub fn array<T>(
    out: &mut Vec<u8>,
    items: impl IntoIterator<Item = T>,
    mut each: impl FnMut(&mut Vec<u8>, T),
) {
    out.push(b'[');
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        each(out, item);
    }
    out.push(b']');
}

/// Appends `value` as a JSON string, escaped exactly as serde_json does.
/// serde_json escapes only `"`, `\` and bytes below 0x20; most strings
/// (names, topics, rendered HTML) hold none, and are then copied whole
/// after a scan that the compiler vectorizes, instead of serde_json's
/// byte-by-byte table walk.
pub fn string(out: &mut Vec<u8>, value: &str) {
    if needs_escape(value.as_bytes()) {
        serde_json::to_writer(&mut *out, value).expect("writing to a Vec cannot fail");
        return;
    }
    out.reserve(value.len() + 2);
    out.push(b'"');
    out.extend_from_slice(value.as_bytes());
    out.push(b'"');
}

/// Whether any byte of `bytes` is one serde_json escapes in a string.
/// Sixteen bytes at a time without an early exit inside a block, so each
/// block is a few vector instructions.
fn needs_escape(bytes: &[u8]) -> bool {
    let escaped = |b: u8| (b < 0x20) | (b == b'"') | (b == b'\\');
    let mut blocks = bytes.chunks_exact(16);
    for block in &mut blocks {
        if block.iter().fold(false, |any, &b| any | escaped(b)) {
            return true;
        }
    }
    blocks.remainder().iter().any(|&b| escaped(b))
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;

    /// A `reply` is the body `success` makes of the same map, whether its
    /// members sort before, between or after the envelope's, with a member
    /// given ahead or after greater ones, and with ignored parameters
    /// (which go at the end, or merged in when a greater key is written).
    #[test]
    fn a_reply_is_the_body_success_makes_of_its_map() {
        let member_sets: [&[&'static str]; 5] =
            [&[], &["id"], &["events", "queue_id"], &["a", "is_x", "zeta"], &["msgs", "resulted"]];
        for members in member_sets {
            for given in [None, Some("b_given"), Some("max_message_id"), Some("zz")] {
                for given_first in [true, false] {
                    for ignored in
                        [vec![], vec!["x".to_owned()], vec!["a".to_owned(), "zz".to_owned()]]
                    {
                        let mut reply = SortedMembers::reply(16);
                        let mut map = serde_json::Map::new();
                        if let (Some(key), true) = (given, given_first) {
                            reply.insert(key, b"[7]".to_vec());
                        }
                        for (i, key) in members.iter().enumerate() {
                            reply.unsigned(key, i as u64);
                            map.insert((*key).into(), json!(i));
                        }
                        if let (Some(key), false) = (given, given_first) {
                            reply.insert(key, b"[7]".to_vec());
                        }
                        if let Some(key) = given {
                            map.insert(key.into(), json!([7]));
                        }
                        assert_eq!(reply.to_map(), map, "{members:?} {given:?}");
                        let want = crate::http::response::success(map, ignored.clone()).body;
                        let got = crate::http::response::success_sorted(reply, ignored).body;
                        assert_eq!(
                            String::from_utf8(got).unwrap(),
                            String::from_utf8(want).unwrap(),
                            "{members:?} {given:?} first {given_first}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn strings_are_escaped_as_serde_json_escapes_them() {
        // Every byte serde_json escapes, at every position of short and
        // long strings (inside a 16-byte block and in the remainder), and
        // strings with none: the same bytes as serde_json's.
        let mut cases: Vec<String> = vec![String::new(), "hello".into(), "é ü 💬 /\u{7f}".into()];
        for special in ['"', '\\', '\u{0}', '\n', '\t', '\u{1f}', '\u{8}', '\u{c}', '\r'] {
            for len in [1, 15, 16, 17, 40] {
                for at in [0, len / 2, len - 1] {
                    let mut s: String = "x".repeat(len);
                    s.replace_range(at..at + 1, &special.to_string());
                    cases.push(s);
                }
            }
        }
        cases.push("<p>plain text of sixty-four bytes, more or less, in one go</p>".into());
        for case in cases {
            let mut out = b"[".to_vec();
            string(&mut out, &case);
            assert_eq!(out[1..], serde_json::to_vec(&case).unwrap()[..], "{case:?}");
        }
    }

    #[test]
    fn extra_members_land_where_a_map_would_put_them() {
        let mut m = SortedMembers::default();
        m.insert("g0", b"[1]".to_vec());
        m.unsigned("b", 2);
        m.string("d", "x\"\u{1}é");
        m.null("f");
        m.boolean("h", true);
        for extra in [
            vec![],
            vec![("a", &b"1"[..])],
            vec![("c", &b"[]"[..]), ("e", &b"\"\""[..]), ("z", &b"{}"[..])],
            vec![("a", &b"0"[..]), ("g", &b"false"[..])],
            // More than fit the merge's stack array with the late member.
            ["c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7", "i"]
                .into_iter()
                .map(|k| (k, &b"7"[..]))
                .collect(),
        ] {
            let mut out = Vec::new();
            m.write_object(&mut out, &extra);
            let mut map: serde_json::Map<String, Value> = serde_json::from_value(
                json!({ "b": 2, "d": "x\"\u{1}é", "f": null, "g0": [1], "h": true }),
            )
            .unwrap();
            for (k, v) in &extra {
                map.insert((*k).into(), serde_json::from_slice(v).unwrap());
            }
            let expected = serde_json::to_string(&map).unwrap();
            assert_eq!(String::from_utf8(out).unwrap(), expected);
            // The same object written directly, after text already there.
            let mut out = b"[0,".to_vec();
            let mut o = Object::start(&mut out, &extra);
            o.unsigned("b", 2);
            o.string("d", "x\"\u{1}é");
            o.member("f").extend_from_slice(b"null");
            o.member("g0").extend_from_slice(b"[1]");
            o.boolean("h", true);
            o.finish();
            assert_eq!(String::from_utf8(out).unwrap(), format!("[0,{expected}"));
        }
        // Extra members only, one with a key that needs escaping.
        let mut out = Vec::new();
        Object::start(&mut out, &[("z", b"1"), ("a\"", b"2")]).finish();
        assert_eq!(out, br#"{"a\"":2,"z":1}"#);
        let mut out = Vec::new();
        Object::start(&mut out, &[]).finish();
        assert_eq!(out, b"{}");
        for n in [0, 7, 9, 10, 42, 99, 100, 101, 999, 1000, 65_536, 1234567890, u64::MAX]
            .into_iter()
            .chain((0..64).map(|shift| (1u64 << shift) - 1))
        {
            let mut out = Vec::new();
            unsigned(&mut out, n);
            assert_eq!(out, n.to_string().into_bytes());
            assert_eq!(decimal(n, &mut [0; 20]), n.to_string());
        }
        let mut out = Vec::new();
        SortedMembers::default().write_object(&mut out, &[("msg", b"\"\"")]);
        assert_eq!(out, br#"{"msg":""}"#);
        // Extra members out of order and no late ones: sorted all the same.
        let mut m = SortedMembers::default();
        m.unsigned("id", 7);
        let mut out = Vec::new();
        m.write_object(&mut out, &[("result", b"1"), ("ignored", b"2"), ("msg", b"3")]);
        assert_eq!(out, br#"{"id":7,"ignored":2,"msg":3,"result":1}"#);
    }
}
