//! Zulip's server emoji data: the document register's
//! `server_emoji_data_url` points to, `{"code_to_names": {code: [names]}}`,
//! every Unicode emoji's code with its canonical name first and then its
//! aliases. Clients (the mobile app's emoji picker and autocomplete) fetch
//! it without credentials. It is natter's own emoji table
//! (`markdown::emoji`), so the names a client offers are exactly those the
//! server resolves.

use std::sync::OnceLock;

use serde_json::{Map, Value};

use crate::markdown::emoji;

/// Where the document is served, outside `/api/v1` as Zulip serves it (a
/// static file of the web server).
pub const EMOJI_DATA_PATH: &str = "/static/generated/emoji/emoji_api.json";

/// The document as JSON bytes, built once.
pub fn emoji_data() -> &'static [u8] {
    static BODY: OnceLock<Vec<u8>> = OnceLock::new();
    BODY.get_or_init(|| {
        let code_to_names: Map<String, Value> = emoji::names_by_code()
            .map(|(code, names)| (code.to_owned(), Value::from(names)))
            .collect();
        let mut doc = Map::new();
        doc.insert("code_to_names".into(), Value::Object(code_to_names));
        serde_json::to_vec(&Value::Object(doc)).expect("JSON of strings serializes")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_has_its_names_canonical_first() {
        let doc: Value = serde_json::from_slice(emoji_data()).unwrap();
        let map = doc["code_to_names"].as_object().unwrap();
        assert_eq!(map["1f44d"], serde_json::json!(["+1", "thumbs_up", "like"]));
        for (code, names) in map {
            let first = names[0].as_str().unwrap();
            assert_eq!(emoji::name_for_code(code), Some(first), "{code}");
            for name in names.as_array().unwrap() {
                assert_eq!(emoji::code_for_name(name.as_str().unwrap()), Some(code.as_str()));
            }
        }
    }
}
