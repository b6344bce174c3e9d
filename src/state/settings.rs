//! Personal settings: the table of every user setting (name, allowed values,
//! Zulip's default, legacy event group), and each user's overrides.
//!
//! Only values a user changed are stored; a user with no entry — a seeded
//! account, one created by any other code path, one created before this
//! table existed — simply has every default. That keeps `CreateUser` free
//! of settings and lets the table grow without touching the data format:
//! a new setting is a new row here with its default.
//!
//! `full_name` and `timezone` are not here: they live on `User`, which
//! every user JSON already reads.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::ids::UserId;
use super::personal::{
    contains_alert_word, Draft, Invite, LocalIdKind, MutedUsers, NavigationView, Playground,
    PushToken, SavedSnippet, UserStatus, UserTopics,
};
use super::shard::{Entries, Sharded};

/// A stored setting value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SettingValue {
    /// A boolean setting.
    Bool(bool),
    /// An integer setting (enumerations included).
    Int(i64),
    /// A string setting (enumerations included).
    Str(String),
}

impl SettingValue {
    /// The value as Zulip sends it.
    pub fn to_json(&self) -> Value {
        match self {
            SettingValue::Bool(b) => Value::Bool(*b),
            SettingValue::Int(i) => Value::from(*i),
            SettingValue::Str(s) => Value::String(s.clone()),
        }
    }
}

/// A setting's default, as a constant.
#[derive(Clone, Copy, Debug)]
pub enum DefaultValue {
    /// Boolean.
    B(bool),
    /// Integer.
    I(i64),
    /// String.
    S(&'static str),
}

impl DefaultValue {
    /// The default as a stored value.
    pub fn value(self) -> SettingValue {
        match self {
            DefaultValue::B(b) => SettingValue::Bool(b),
            DefaultValue::I(i) => SettingValue::Int(i),
            DefaultValue::S(s) => SettingValue::Str(s.to_owned()),
        }
    }
}

/// Which values a setting accepts (its type follows from its default).
#[derive(Clone, Copy, Debug)]
pub enum Allowed {
    /// Any value of the type (booleans).
    Any,
    /// One of these integers.
    Ints(&'static [i64]),
    /// An integer in this inclusive range.
    Range(i64, i64),
    /// One of these strings.
    Strs(&'static [&'static str]),
}

/// Which pre-`user_settings` event and register group a setting belongs to
/// (Zulip's frozen legacy lists; settings added later have none).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Legacy {
    /// Only in `user_settings`.
    None,
    /// `update_display_settings`, top-level in register.
    Display,
    /// `update_global_notifications`, top-level in register.
    Notification,
}

/// One user setting.
#[derive(Clone, Copy, Debug)]
pub struct SettingDef {
    /// The parameter and `user_settings` key.
    pub name: &'static str,
    /// Zulip's default for new users.
    pub default: DefaultValue,
    /// Accepted values.
    pub allowed: Allowed,
    /// Legacy group.
    pub legacy: Legacy,
}

/// Languages with translations (`default_language`), codes only.
pub const LANGUAGES: &[&str] = &[
    "en", "ar", "bg", "ca", "cs", "de", "el", "en_GB", "es", "fa", "fi", "fr", "gl", "hi", "hu",
    "id", "it", "ja", "ko", "lt", "ml", "nl", "pl", "pt", "pt_BR", "pt_PT", "ro", "ru", "sr", "sv",
    "ta", "tr", "uk", "vi", "zh-hans", "zh-hant",
];

/// The name of each language of `LANGUAGES`, in the same order.
const LANGUAGE_NAMES: &[&str] = &[
    "English",
    "العربيّة",
    "български",
    "català",
    "čeština",
    "Deutsch",
    "Ελληνικά",
    "English (United Kingdom)",
    "español",
    "فارسی",
    "suomi",
    "français",
    "galego",
    "हिन्दी",
    "magyar",
    "Bahasa Indonesia",
    "italiano",
    "日本語",
    "한국어",
    "lietuvių",
    "മലയാളം",
    "Nederlands",
    "polski",
    "português",
    "português (Brasil)",
    "português (Portugal)",
    "română",
    "русский",
    "српски",
    "svenska",
    "தமிழ்",
    "Türkçe",
    "українська",
    "Tiếng Việt",
    "简体中文",
    "繁體中文",
];

/// The display name of a `default_language` code.
pub fn language_name(code: &str) -> Option<&'static str> {
    LANGUAGES.iter().position(|c| *c == code).map(|i| LANGUAGE_NAMES[i])
}

/// Emoji sets: `text` and two emoji art styles.
pub const EMOJISETS: &[&str] = &["google", "twitter", "text"];

/// Notification sounds (`none` = silent).
pub const NOTIFICATION_SOUNDS: &[&str] = &["chime", "ding", "zulip", "none"];

const fn def(
    name: &'static str,
    default: DefaultValue,
    allowed: Allowed,
    legacy: Legacy,
) -> SettingDef {
    SettingDef { name, default, allowed, legacy }
}

use Allowed::{Any, Ints, Range, Strs};
use DefaultValue::{B, I, S};
use Legacy::{Display as D, None as N, Notification as Nt};

/// Every user setting natter knows, with Zulip's defaults.
pub const SETTINGS: &[SettingDef] = &[
    // Display and interface.
    def("twenty_four_hour_time", B(false), Any, D),
    def("web_mark_read_on_scroll_policy", I(1), Ints(&[1, 2, 3]), N),
    def("web_channel_default_view", I(1), Ints(&[1, 2, 3, 4]), N),
    def("starred_message_counts", B(true), Any, D),
    def("receives_typing_notifications", B(true), Any, N),
    def("web_suggest_update_timezone", B(true), Any, N),
    def("fluid_layout_width", B(false), Any, D),
    def("high_contrast_mode", B(false), Any, D),
    def("web_font_size_px", I(16), Range(12, 20), N),
    def("web_line_height_percent", I(140), Range(122, 158), N),
    def("color_scheme", I(1), Ints(&[1, 2, 3]), D),
    def("enable_drafts_synchronization", B(true), Any, D),
    def("translate_emoticons", B(false), Any, D),
    def("display_emoji_reaction_users", B(true), Any, D),
    def("default_language", S("en"), Strs(LANGUAGES), D),
    def("web_home_view", S("inbox"), Strs(&["recent_topics", "inbox", "all_messages"]), N),
    def("web_escape_navigates_to_home_view", B(true), Any, N),
    def("left_side_userlist", B(false), Any, D),
    def("emojiset", S("google"), Strs(EMOJISETS), D),
    def("demote_inactive_streams", I(1), Ints(&[1, 2, 3]), D),
    def("user_list_style", I(2), Ints(&[1, 2, 3]), D),
    def("web_animate_image_previews", S("on_hover"), Strs(&["always", "on_hover", "never"]), N),
    def("web_stream_unreads_count_display_policy", I(2), Ints(&[1, 2, 3]), N),
    def("hide_ai_features", B(false), Any, N),
    def("web_left_sidebar_show_channel_folders", B(true), Any, N),
    def("web_left_sidebar_unreads_count_summary", B(true), Any, N),
    def("web_navigate_to_sent_message", B(true), Any, N),
    def("enter_sends", B(false), Any, N),
    // Privacy.
    def("send_private_typing_notifications", B(true), Any, N),
    def("send_stream_typing_notifications", B(true), Any, N),
    def("send_read_receipts", B(true), Any, N),
    def("presence_enabled", B(true), Any, Nt),
    def("allow_private_data_export", B(false), Any, N),
    def("email_address_visibility", I(1), Ints(&[1, 2, 3, 4, 5]), N),
    // Topics.
    def("automatically_follow_topics_policy", I(3), Ints(&[1, 2, 3, 4]), N),
    def("automatically_unmute_topics_in_muted_streams_policy", I(2), Ints(&[1, 2, 3, 4]), N),
    def("automatically_follow_topics_where_mentioned", B(true), Any, N),
    def(
        "resolved_topic_notice_auto_read_policy",
        S("except_followed"),
        Strs(&["always", "except_followed", "never"]),
        N,
    ),
    // Notifications.
    def("enable_stream_desktop_notifications", B(false), Any, Nt),
    def("enable_stream_email_notifications", B(false), Any, Nt),
    def("enable_stream_push_notifications", B(false), Any, Nt),
    def("enable_stream_audible_notifications", B(false), Any, Nt),
    def("notification_sound", S("zulip"), Strs(NOTIFICATION_SOUNDS), Nt),
    def("enable_desktop_notifications", B(true), Any, Nt),
    def("enable_sounds", B(true), Any, Nt),
    def("email_notifications_batching_period_seconds", I(120), Range(120, 604_800), Nt),
    def("enable_offline_email_notifications", B(true), Any, Nt),
    def("enable_offline_push_notifications", B(true), Any, Nt),
    def("enable_online_push_notifications", B(true), Any, Nt),
    def("enable_followed_topic_desktop_notifications", B(true), Any, N),
    def("enable_followed_topic_email_notifications", B(true), Any, N),
    def("enable_followed_topic_push_notifications", B(true), Any, N),
    def("enable_followed_topic_audible_notifications", B(true), Any, N),
    def("enable_followed_topic_wildcard_mentions_notify", B(true), Any, N),
    def("wildcard_mentions_notify", B(true), Any, Nt),
    def("pm_content_in_desktop_notifications", B(true), Any, Nt),
    def("message_content_in_email_notifications", B(true), Any, Nt),
    def("enable_digest_emails", B(true), Any, Nt),
    def("enable_login_emails", B(true), Any, Nt),
    def("enable_marketing_emails", B(true), Any, Nt),
    def("desktop_icon_count_display", I(1), Ints(&[1, 2, 3]), Nt),
    def("realm_name_in_email_notifications_policy", I(1), Ints(&[1, 2, 3]), N),
];

/// The definition of a setting by name.
pub fn setting_def(name: &str) -> Option<&'static SettingDef> {
    SETTINGS.iter().find(|d| d.name == name)
}

/// One user's settings: only the values that differ from the table.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserSettings {
    /// Changed settings by name.
    pub overrides: BTreeMap<String, SettingValue>,
}

impl UserSettings {
    /// The effective value of a known setting.
    ///
    /// # Panics
    /// If `name` is not in `SETTINGS` (a programming error).
    pub fn get(&self, name: &str) -> SettingValue {
        match self.overrides.get(name) {
            Some(v) => v.clone(),
            None => {
                setting_def(name).unwrap_or_else(|| panic!("no setting {name}")).default.value()
            }
        }
    }

    /// A boolean setting.
    pub fn bool(&self, name: &str) -> bool {
        matches!(self.get(name), SettingValue::Bool(true))
    }
}

/// The changes one `PATCH /settings` makes, all applied at once.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SettingsChange {
    /// The user.
    pub user: UserId,
    /// New display name.
    pub full_name: Option<String>,
    /// New IANA time zone (`""` = unset).
    pub timezone: Option<String>,
    /// Table settings, in request order.
    pub settings: Vec<(String, SettingValue)>,
}

impl SettingsChange {
    /// Whether it changes nothing.
    pub fn is_empty(&self) -> bool {
        self.full_name.is_none() && self.timezone.is_none() && self.settings.is_empty()
    }
}

/// An email-address change waiting for its confirmation link.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmailChange {
    /// The random key in the link (drawn before logging).
    pub key: String,
    /// Whose address changes.
    pub user: UserId,
    /// The new address.
    pub new_email: String,
    /// UNIX seconds after which the link is refused.
    pub expires: i64,
}

/// Every personal-settings map of the server. One field of `State`, so the
/// area grows here without touching `State` again.
#[derive(Default)]
pub struct SettingsState {
    /// Each user's changed settings (absent = all defaults).
    pub user_settings: Sharded<UserId, UserSettings>,
    /// Argon2 password hashes (PHC strings), hashed before logging. No
    /// entry = no password login.
    pub passwords: Sharded<UserId, String>,
    /// Pending email changes by confirmation key.
    pub email_changes: Sharded<String, EmailChange>,
    /// Next free id of each kind this area allocates.
    pub ids: Sharded<LocalIdKind, u64>,
    /// Alert words per user, in the order added.
    pub alert_words: Sharded<UserId, Vec<String>>,
    /// Drafts per user, by id.
    pub drafts: Sharded<UserId, BTreeMap<u64, Draft>>,
    /// Status per user (absent = none).
    pub statuses: Sharded<UserId, UserStatus>,
    /// Muted users per user.
    pub muted_users: Sharded<UserId, MutedUsers>,
    /// Topic visibility policies per user.
    pub user_topics: Sharded<UserId, UserTopics>,
    /// Navigation views per user, in the order added.
    pub navigation_views: Sharded<UserId, Vec<NavigationView>>,
    /// Saved snippets per user, by id.
    pub snippets: Sharded<UserId, BTreeMap<u64, SavedSnippet>>,
    /// Push tokens per user.
    pub push_tokens: Sharded<UserId, Vec<PushToken>>,
    /// Code playgrounds by id (every realm).
    pub playgrounds: Sharded<u64, Playground>,
    /// Invitations by id (every realm).
    pub invites: Sharded<u64, Invite>,
    /// Derived (rebuilt from `invites`): invitation id by link key.
    pub invite_by_key: Sharded<String, u64>,
    /// Derived hints for a send: set once anyone has had alert words or a
    /// muted user (never cleared; see `may_have_alert_words`).
    pub(crate) hints: SendHints,
}

/// Whether any user may have alert words or muted users: a send looks
/// them up per recipient only then. Asking the maps themselves
/// (`Sharded::is_empty`) takes all 64 shard locks twice per send — about
/// 1,400 instructions, as much as writing ten recipients' rows. A hint
/// only gates a lookup whose answer is "no" without an entry, so a stale
/// `true` (words since removed) changes nothing but the time.
#[derive(Debug, Default)]
pub(crate) struct SendHints {
    alert_words: std::sync::atomic::AtomicBool,
    muted_users: std::sync::atomic::AtomicBool,
}

impl SendHints {
    fn note(flag: &std::sync::atomic::AtomicBool) {
        flag.store(true, std::sync::atomic::Ordering::Release);
    }
}

/// `SettingsState` as key-sorted data, for snapshots (see `StateImage`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SettingsImage {
    /// Changed settings per user.
    pub user_settings: Entries<UserId, UserSettings>,
    /// Password hashes per user.
    pub passwords: Entries<UserId, String>,
    /// Pending email changes by key.
    pub email_changes: Entries<String, EmailChange>,
    /// Id counters.
    pub ids: Entries<LocalIdKind, u64>,
    /// Alert words.
    pub alert_words: Entries<UserId, Vec<String>>,
    /// Drafts.
    pub drafts: Entries<UserId, BTreeMap<u64, Draft>>,
    /// Statuses.
    pub statuses: Entries<UserId, UserStatus>,
    /// Muted users.
    pub muted_users: Entries<UserId, MutedUsers>,
    /// Topic policies.
    pub user_topics: Entries<UserId, UserTopics>,
    /// Navigation views.
    pub navigation_views: Entries<UserId, Vec<NavigationView>>,
    /// Saved snippets.
    pub snippets: Entries<UserId, BTreeMap<u64, SavedSnippet>>,
    /// Push tokens.
    pub push_tokens: Entries<UserId, Vec<PushToken>>,
    /// Playgrounds.
    pub playgrounds: Entries<u64, Playground>,
    /// Invitations.
    pub invites: Entries<u64, Invite>,
}

impl SettingsImage {
    /// How many shared pointers the cut copied.
    pub fn parts(&self) -> usize {
        parts(&self.user_settings)
            + parts(&self.passwords)
            + parts(&self.email_changes)
            + parts(&self.ids)
            + parts(&self.alert_words)
            + parts(&self.drafts)
            + parts(&self.statuses)
            + parts(&self.muted_users)
            + parts(&self.user_topics)
            + parts(&self.navigation_views)
            + parts(&self.snippets)
            + parts(&self.push_tokens)
            + parts(&self.playgrounds)
            + parts(&self.invites)
    }
}

fn parts<K, V>(entries: &Entries<K, V>) -> usize {
    entries.parts()
}

impl SettingsState {
    /// The snapshot cut (under the commit writer lock, like `State::image`):
    /// every map frozen.
    pub fn image(&self) -> SettingsImage {
        fn all<K: std::hash::Hash + Eq + Ord + Clone, V: Clone>(
            m: &Sharded<K, V>,
        ) -> Entries<K, V> {
            m.freeze().into()
        }
        SettingsImage {
            user_settings: all(&self.user_settings),
            passwords: all(&self.passwords),
            email_changes: all(&self.email_changes),
            ids: all(&self.ids),
            alert_words: all(&self.alert_words),
            drafts: all(&self.drafts),
            statuses: all(&self.statuses),
            muted_users: all(&self.muted_users),
            user_topics: all(&self.user_topics),
            navigation_views: all(&self.navigation_views),
            snippets: all(&self.snippets),
            push_tokens: all(&self.push_tokens),
            playgrounds: all(&self.playgrounds),
            invites: all(&self.invites),
        }
    }

    /// Rebuilds from a snapshot (and the derived key index).
    pub fn from_image(image: SettingsImage) -> Self {
        let state = SettingsState {
            user_settings: image.user_settings.into_iter().collect(),
            passwords: image.passwords.into_iter().collect(),
            email_changes: image.email_changes.into_iter().collect(),
            ids: image.ids.into_iter().collect(),
            alert_words: image.alert_words.into_iter().collect(),
            drafts: image.drafts.into_iter().collect(),
            statuses: image.statuses.into_iter().collect(),
            muted_users: image.muted_users.into_iter().collect(),
            user_topics: image.user_topics.into_iter().collect(),
            navigation_views: image.navigation_views.into_iter().collect(),
            snippets: image.snippets.into_iter().collect(),
            push_tokens: image.push_tokens.into_iter().collect(),
            playgrounds: image.playgrounds.into_iter().collect(),
            invites: Sharded::new(),
            invite_by_key: Sharded::new(),
            hints: SendHints::default(),
        };
        if !state.alert_words.is_empty() {
            state.noted_alert_words();
        }
        if !state.muted_users.is_empty() {
            state.noted_muted_users();
        }
        for (id, invite) in image.invites {
            state.invite_by_key.insert(invite.key.clone(), id);
            state.invites.insert(id, invite);
        }
        state
    }

    /// A user's settings (defaults for users with no entry).
    pub fn of(&self, user: UserId) -> UserSettings {
        self.user_settings.get(&user).unwrap_or_default()
    }

    /// The next free id of a kind (read under the writer lock).
    pub fn peek_id(&self, kind: LocalIdKind) -> u64 {
        self.ids.get(&kind).unwrap_or(1)
    }

    /// The `n` ids starting at `peek_id(kind)`.
    pub fn peek_ids(&self, kind: LocalIdKind, n: usize) -> Vec<u64> {
        let first = self.peek_id(kind);
        (first..first + n as u64).collect()
    }

    /// Records that `id` is taken (apply only).
    pub(crate) fn claim_id(&self, kind: LocalIdKind, id: u64) {
        self.ids.upsert(kind, |next| *next = (*next).max(id + 1));
    }

    /// Records that someone may have alert words (apply, when setting them).
    pub(crate) fn noted_alert_words(&self) {
        SendHints::note(&self.hints.alert_words);
    }

    /// Records that someone may have muted a user (apply, when muting).
    pub(crate) fn noted_muted_users(&self) {
        SendHints::note(&self.hints.muted_users);
    }

    /// False only if no user has ever had alert words in this state.
    pub fn may_have_alert_words(&self) -> bool {
        self.hints.alert_words.load(std::sync::atomic::Ordering::Acquire)
    }

    /// False only if no user has ever muted another in this state.
    pub fn may_have_muted_users(&self) -> bool {
        self.hints.muted_users.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Whether `user` has muted `other`.
    pub fn has_muted(&self, user: UserId, other: UserId) -> bool {
        self.muted_users.read(&user, |m| m.contains_key(&other)).unwrap_or(false)
    }

    /// Whether `user` gets `has_alert_word` on a message with `content`.
    pub fn has_alert_word(&self, user: UserId, content: &str) -> bool {
        self.alert_words
            .read(&user, |words| words.iter().any(|w| contains_alert_word(content, w)))
            .unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_consistent() {
        let mut names: Vec<&str> = SETTINGS.iter().map(|d| d.name).collect();
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(before, names.len(), "duplicate setting names");
        for d in SETTINGS {
            let ok = match (d.default, d.allowed) {
                (DefaultValue::B(_), Allowed::Any) => true,
                (DefaultValue::I(i), Allowed::Ints(v)) => v.contains(&i),
                (DefaultValue::I(i), Allowed::Range(lo, hi)) => (lo..=hi).contains(&i),
                (DefaultValue::S(s), Allowed::Strs(v)) => v.contains(&s),
                _ => false,
            };
            assert!(ok, "{}: default not allowed or wrong type", d.name);
        }
    }

    #[test]
    fn every_language_has_a_name() {
        assert_eq!(LANGUAGES.len(), LANGUAGE_NAMES.len());
        assert_eq!(language_name("de"), Some("Deutsch"));
        assert_eq!(language_name("xx"), None);
    }

    #[test]
    fn absent_means_default_and_overrides_win() {
        let mut s = UserSettings::default();
        assert!(s.bool("receives_typing_notifications"));
        assert_eq!(s.get("web_home_view"), SettingValue::Str("inbox".into()));
        s.overrides.insert("receives_typing_notifications".into(), SettingValue::Bool(false));
        assert!(!s.bool("receives_typing_notifications"));
    }
}
