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

use std::collections::BTreeMap;

use serde_json::Value;

use crate::error::{ApiError, ApiResult};

/// Deepest JSON nesting accepted in a parameter: decoding is recursive and
/// coroutine stacks are small, and no Zulip parameter nests deeper than a
/// few levels.
pub const MAX_JSON_DEPTH: usize = 16;

/// The decoded parameters of one request: name → (value, asked for yet).
/// The mark lives beside the value, so a getter allocates nothing.
#[derive(Debug, Default)]
pub struct Params {
    values: BTreeMap<String, (String, bool)>,
}

impl Params {
    /// Decodes `a=1&b=2` pairs (a query string or a form body) on top of
    /// what is already there; a repeated key keeps its last value.
    pub fn add_urlencoded(&mut self, raw: &[u8]) {
        for (k, v) in form_urlencoded::parse(raw) {
            self.values.insert(k.into_owned(), (v.into_owned(), false));
        }
    }

    /// Adds decoded (name, value) pairs, e.g. multipart text parts; a
    /// repeated name keeps its last value.
    pub fn add_pairs(&mut self, pairs: impl IntoIterator<Item = (String, String)>) {
        self.values.extend(pairs.into_iter().map(|(k, v)| (k, (v, false))));
    }

    /// Parameters from literal pairs (tests, internal callers).
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let mut p = Params::default();
        for (k, v) in pairs {
            p.values.insert(k.to_owned(), (v.to_owned(), false));
        }
        p
    }

    /// The raw text of a parameter, marking it used.
    pub fn raw(&mut self, name: &str) -> Option<&str> {
        let (value, used) = self.values.get_mut(name)?;
        *used = true;
        Some(value.as_str())
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

    /// Names of parameters no getter asked for, sorted.
    pub fn unused(&self) -> Vec<String> {
        self.values.iter().filter(|(_, (_, used))| !used).map(|(k, _)| k.clone()).collect()
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
