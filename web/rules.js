// Who may edit or delete a message: the server's own rules
// (`delete_refusal` in src/state/access.rs, the content checks of
// `PATCH /messages/{id}` in src/api/message_edit.rs), read from what
// `register` returned and its events keep current. The page offers Edit
// and Delete only where these allow them; the server still decides.
//
// `rules`: {
//   me: the user's id,
//   realm: { allow_message_editing, message_content_edit_limit_seconds
//            (0: no limit), message_content_delete_limit_seconds (null:
//            no limit), can_delete_any_message_group,
//            can_delete_own_message_group },
//   groups: Map of group id → { members: Set of user ids, subgroups: [ids] },
//   channels: Map of channel id → a channel object (its
//             can_delete_any_message_group, can_delete_own_message_group),
// }

// As deep as the server follows subgroups.
const MAX_GROUP_DEPTH = 32;

function inGroup(rules, id, seen, depth) {
  if (depth > MAX_GROUP_DEPTH || seen.has(id)) return false;
  const group = rules.groups.get(id);
  if (!group) return false;
  if (group.members.has(rules.me)) return true;
  seen.add(id);
  return group.subgroups.some((sub) => inGroup(rules, sub, seen, depth + 1));
}

// Whether the user holds a group-setting value: a group id, or
// `{direct_members, direct_subgroups}`.
export function holds(rules, setting) {
  if (setting == null) return false;
  if (typeof setting === "number") return inGroup(rules, setting, new Set(), 0);
  return (setting.direct_members || []).includes(rules.me)
    || (setting.direct_subgroups || []).some((g) => inGroup(rules, g, new Set(), 0));
}

// Whether the user may change the content of `m` at `now` (seconds):
// their own message, while the realm allows editing, within its limit.
export function mayEdit(rules, m, now) {
  const realm = rules.realm;
  if (m.sender_id !== rules.me || !realm.allow_message_editing) return false;
  const limit = realm.message_content_edit_limit_seconds;
  return !limit || now - m.timestamp <= limit;
}

// Whether the user may delete `m` at `now` (seconds): anyone in the
// realm's or the channel's delete-any group, any message; its sender,
// in the realm's or the channel's delete-own group, within the realm's
// limit.
export function mayDelete(rules, m, now) {
  const realm = rules.realm;
  const channel = m.type === "stream" ? rules.channels.get(m.stream_id) : null;
  if (holds(rules, realm.can_delete_any_message_group) || (channel && holds(rules, channel.can_delete_any_message_group))) {
    return true;
  }
  if (m.sender_id !== rules.me) return false;
  if (!holds(rules, realm.can_delete_own_message_group) && !(channel && holds(rules, channel.can_delete_own_message_group))) {
    return false;
  }
  const limit = realm.message_content_delete_limit_seconds;
  return limit == null || now - m.timestamp <= limit;
}
