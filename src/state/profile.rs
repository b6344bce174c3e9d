//! Custom profile fields (Zulip's `custom_profile_fields`) and each user's
//! values for them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::ids::RealmId;

/// Zulip's custom profile field types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum FieldType {
    /// 1: one line of text.
    ShortText,
    /// 2: a paragraph (Markdown).
    LongText,
    /// 3: one of a fixed set of options.
    Choice,
    /// 4: a date (`YYYY-MM-DD`).
    Date,
    /// 5: a URL.
    Link,
    /// 6: users of the realm.
    User,
    /// 7: an account on an external service.
    ExternalAccount,
    /// 8: pronouns.
    Pronouns,
}

impl FieldType {
    /// Every type, in Zulip's numbering.
    pub const ALL: [FieldType; 8] = [
        FieldType::ShortText,
        FieldType::LongText,
        FieldType::Choice,
        FieldType::Date,
        FieldType::Link,
        FieldType::User,
        FieldType::ExternalAccount,
        FieldType::Pronouns,
    ];

    /// Zulip's integer for the type.
    pub fn code(self) -> u8 {
        self as u8 + 1
    }

    /// The type with Zulip's integer `code`.
    pub fn from_code(code: i64) -> Option<FieldType> {
        usize::try_from(code - 1).ok().and_then(|i| Self::ALL.get(i).copied())
    }

    /// Zulip's name for the type (as in `custom_profile_field_types`).
    pub fn name(self) -> &'static str {
        match self {
            FieldType::ShortText => "SHORT_TEXT",
            FieldType::LongText => "LONG_TEXT",
            FieldType::Choice => "SELECT",
            FieldType::Date => "DATE",
            FieldType::Link => "URL",
            FieldType::User => "USER",
            FieldType::ExternalAccount => "EXTERNAL_ACCOUNT",
            FieldType::Pronouns => "PRONOUNS",
        }
    }
}

/// One custom profile field of a realm.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProfileField {
    /// Server-wide id.
    pub id: u64,
    /// Owning realm.
    pub realm: RealmId,
    /// Type.
    pub field_type: FieldType,
    /// Position in the realm's list (ascending).
    pub order: u64,
    /// Label, unique in the realm.
    pub name: String,
    /// Help text.
    pub hint: String,
    /// Type-specific data as JSON text: choices for `Choice`, `subtype`
    /// (and `url_pattern`) for `ExternalAccount`, else empty.
    pub field_data: String,
    /// Shown in the user card.
    pub display_in_profile_summary: bool,
    /// Users must fill it in.
    pub required: bool,
    /// Users may change their own value.
    pub editable_by_user: bool,
}

/// One user's values: field id → (value, rendered HTML for Markdown fields).
pub type Values = BTreeMap<u64, (String, Option<String>)>;
