// Zulip's search syntax ↔ narrows: `channel:general topic:"lunch plans"
// dm:a@x.test sender:b@x.test is:unread has:link words`.

const OPERATORS = new Set([
  "channel", "stream", "topic", "subject", "dm", "pm-with", "dm-including", "sender", "from",
  "is", "has", "near", "id", "channels", "streams",
]);

// The terms of a search string, quotes keeping spaces together.
function terms(text) {
  const out = [];
  const pattern = /(-?)([a-z-]+):(?:"([^"]*)"|(\S+))|"([^"]*)"|(\S+)/gi;
  let m;
  while ((m = pattern.exec(text))) {
    if (m[2] && OPERATORS.has(m[2].toLowerCase())) {
      let operator = m[2].toLowerCase();
      operator = { stream: "channel", subject: "topic", "pm-with": "dm", from: "sender", streams: "channels" }[operator] || operator;
      out.push({ operator, operand: m[3] ?? m[4], negated: m[1] === "-" || undefined });
    } else {
      out.push({ operator: "search", operand: m[5] ?? m[6] ?? m[0] });
    }
  }
  return out;
}

export function parse(text) {
  const narrow = [];
  const words = [];
  for (const term of terms(text.trim())) {
    if (term.operator === "search") words.push(term.operand);
    else narrow.push(term.negated ? term : { operator: term.operator, operand: term.operand });
  }
  if (words.length) narrow.push({ operator: "search", operand: words.join(" ") });
  return narrow;
}

function quote(operand) {
  return /\s/.test(operand) ? `"${operand}"` : operand;
}

export function unparse(narrow) {
  return narrow
    .map((t) => (t.operator === "search" ? t.operand : `${t.negated ? "-" : ""}${t.operator}:${quote(String(t.operand))}`))
    .join(" ");
}

// A narrow's place in the address bar, so reloads and Back keep it.
export function toHash(narrow) {
  return narrow.length ? "#narrow/" + encodeURIComponent(unparse(narrow)) : "#";
}

export function fromHash(hash) {
  const m = /^#narrow\/(.*)$/.exec(hash);
  return m ? parse(decodeURIComponent(m[1])) : [];
}
