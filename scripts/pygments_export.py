#!/usr/bin/env python3
"""Exports Pygments' lexer rule tables for natter's highlighter.

Zulip highlights code blocks with Pygments; natter runs the same rule
tables with its own small engine (src/markdown/highlight.rs) so that the
HTML is byte for byte Pygments' HTML formatter output. This script writes:

- data/pygments/lexers.json: the rule tables of a curated set of lexers
  (regular expressions rewritten to fancy-regex syntax, token types as
  the formatter's CSS classes), and every lexer alias → display name;
- tests/fixtures/pygments.json (with --fixtures): a corpus of snippets and
  the HTML Zulip's code-block path makes of each with real Pygments, which
  the Rust test `highlight::tests::matches_pygments` compares byte for byte.

Pygments is BSD-licensed (data/pygments/LICENSE). The version is pinned:
the rule tables change between releases (from 2.19 the space after `def`
has its own `w` span).

    python3 -m venv /tmp/pyg && /tmp/pyg/bin/pip install pygments==2.19.2
    /tmp/pyg/bin/python scripts/pygments_export.py --fixtures
"""

import json
from html import escape
import os
import re
import sys

import pygments
from pygments import highlight, lexer as plexer
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_all_lexers, get_lexer_by_name
from pygments.lexers.data import JsonLexer, YamlLexer
from pygments.lexers.make import BaseMakefileLexer, MakefileLexer
from pygments.lexers.php import PhpLexer
from pygments.token import (Comment, Error, Name, Keyword, Operator, String, Text, Whitespace,
                            _TokenType)

PINNED = "2.19.2"

# The languages highlighted, by alias (the lexers they use pull in the
# lexers they delegate to).
CURATED = [
    "python", "python2", "javascript", "typescript", "jsx", "rust", "go",
    "java", "c", "cpp", "csharp", "kotlin", "dart", "bash", "sql",
    "html", "xml", "css", "scss", "markdown", "tex", "diff", "toml", "ini",
    "haskell", "erlang", "r", "ocaml", "clojure",
    "nginx", "graphql", "protobuf", "powershell", "batch", "perl",
    "json", "docker", "php", "make", "yaml", "ruby",
]

# The YAML lexer's callbacks (Python functions keeping an indentation
# context), exported by name with their arguments; highlight.rs has their
# ports (`Hook`).
YAML_HOOKS = {
    "something", "reset_indent", "save_indent", "set_indent",
    "set_block_scalar_indent", "parse_block_scalar_empty_line",
    "parse_block_scalar_indent", "parse_plain_scalar_indent",
}

# The lexers whose callbacks keep a context of their own (an
# ExtendedRegexLexer), each exported with its callbacks as hooks.
EXTENDED = {"YamlLexer", "RubyLexer"}

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
FORMATTER = HtmlFormatter()


class Unsupported(Exception):
    pass


def css_class(ttype):
    return FORMATTER._get_css_classes(ttype)


def shrink(pattern):
    """Pygments' spelled-out Unicode classes (pygments/unistring.py) as
    Unicode property classes: the same characters up to the Unicode
    version, in a fraction of the size."""
    from pygments import unistring as uni
    pattern = pattern.replace(uni.xid_start, "_\\p{XID_Start}")
    pattern = pattern.replace(uni.xid_continue, "\\p{XID_Continue}")
    for cat in sorted(uni.cats, key=lambda c: -len(getattr(uni, c))):
        chars = getattr(uni, cat)
        if len(chars) > 30 and cat not in ("Cs", "Cn", "Co"):
            pattern = pattern.replace(chars, "\\p{%s}" % cat)
    return pattern


def translate(pattern):
    """Python `re` syntax → fancy-regex syntax, for the constructs the
    exported lexers use."""
    out = []
    i = 0
    in_class = False
    class_start = 0
    n = len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            if i + 1 >= n:
                raise Unsupported("trailing backslash")
            e = pattern[i + 1]
            if e == "Z":
                out.append("\\z")
            elif e == "p" and pattern.startswith("{", i + 2):
                j = pattern.index("}", i) + 1
                out.append(pattern[i:j])
                i = j
                continue
            elif e.isdigit() and e != "0" and not in_class:
                out.append("\\" + e)
            elif e == "0" or (e.isdigit() and in_class):
                j = i + 1
                while j < n and j < i + 4 and pattern[j] in "01234567":
                    j += 1
                out.append("\\x{%x}" % int(pattern[i + 1:j], 8))
                i = j
                continue
            elif e.isalnum() or e in "\\.^$|?*+()[]{}-#&~ \n":
                out.append("\\" + e)
            else:
                out.append(re.escape(e) if not e.isspace() else "\\" + e)
            i += 2
            continue
        if in_class:
            if c == "]" and i > class_start:
                in_class = False
                out.append(c)
            elif c == "[":
                out.append("\\[")
            elif c in "&~-" and i + 1 < n and pattern[i + 1] == c:
                out.append("\\" + c)
            elif c == "&" or c == "~":
                out.append("\\" + c)
            else:
                out.append(c)
            i += 1
            continue
        if c == "[":
            in_class = True
            out.append(c)
            i += 1
            if i < n and pattern[i] == "^":
                out.append("^")
                i += 1
            class_start = i
            if i < n and pattern[i] == "]":
                out.append("\\]")
                i += 1
            continue
        if c == "{":
            m = re.match(r"\{(\d*)(,?)(\d*)\}", pattern[i:])
            if m and (m.group(1) or (m.group(2) and m.group(3))):
                lo = m.group(1) or "0"
                out.append("{%s%s%s}" % (lo, m.group(2), m.group(3)))
                i += m.end()
                continue
            out.append("\\{")
            i += 1
            continue
        if c == "}":
            out.append("\\}")
            i += 1
            continue
        if pattern.startswith("(?P=", i):
            j = pattern.index(")", i)
            out.append("\\k<%s>" % pattern[i + 4:j])
            i = j + 1
            continue
        if pattern.startswith("(?P<", i):
            out.append("(?<")
            i += 4
            continue
        if pattern.startswith("(?", i) and i + 2 < n and pattern[i + 2] in "aiLmsux-":
            m = re.match(r"\(\?([aiLmsux]*)(?:-([imsx]*))?([:)])", pattern[i:])
            if not m:
                raise Unsupported("flags group")
            on = m.group(1).replace("u", "").replace("a", "").replace("L", "")
            off = m.group(2) or ""
            flags = on + ("-" + off if off else "")
            if m.group(3) == ")" and not flags:
                i += m.end()
                continue
            out.append("(?" + (flags if flags else "") + m.group(3) if flags else "(?:")
            i += m.end()
            continue
        out.append(c)
        i += 1
    return "".join(out)


def flag_string(flags):
    s = ""
    if flags & re.IGNORECASE:
        s += "i"
    if flags & re.MULTILINE:
        s += "m"
    if flags & re.DOTALL:
        s += "s"
    if flags & re.VERBOSE:
        s += "x"
    return s


def closure(fn):
    return dict(zip(fn.__code__.co_freevars, (c.cell_contents for c in fn.__closure__ or ())))


class Exporter:
    def __init__(self):
        self.lexers = {}
        self.pending = []

    def want(self, cls):
        name = cls.__name__
        if name not in self.lexers and cls not in self.pending:
            self.pending.append(cls)
        return name

    def action(self, action, owner):
        if action is None:
            return None
        if type(action) is _TokenType:
            return css_class(action)
        if not callable(action) or not hasattr(action, "__code__"):
            raise Unsupported("action %r" % (action,))
        qual = action.__qualname__
        if qual.startswith("bygroups."):
            args = closure(action)["args"]
            return {"groups": [self.action(a, owner) for a in args]}
        if qual.startswith("using."):
            env = closure(action)
            kwargs = {k: v for k, v in env.get("kwargs", {}).items() if k != "state"}
            other = env.get("_other", plexer.this)
            stack = list(env["gt_kwargs"].get("stack", ("root",)))
            if kwargs == {"_startinline": True} and owner == "PhpLexer" and other is plexer.this:
                stack = ["root", "php"]
            elif kwargs:
                raise Unsupported("using() options %r" % kwargs)
            target = owner if other is plexer.this else self.want(other)
            return {"using": target, "stack": stack}
        if qual == "MarkdownLexer._handle_codeblock":
            # A fenced block: the fence and language as backticks, the
            # code by the lexer the language names (or as a string).
            return {"codeblock": {"fence": css_class(String.Backtick),
                                  "space": css_class(Whitespace),
                                  "extra": css_class(Text),
                                  "code": css_class(String)}}
        parts = qual.split(".")
        if (owner == "YamlLexer" and len(parts) == 4 and parts[0] == owner
                and parts[1] in YAML_HOOKS and parts[2:] == ["<locals>", "callback"]):
            env = closure(action)
            hook = {"hook": parts[1]}
            if parts[1] == "parse_block_scalar_empty_line":
                hook["token"] = css_class(env["indent_token_class"])
                hook["content"] = css_class(env["content_token_class"])
            else:
                hook["token"] = css_class(env["token_class"])
            if parts[1] == "save_indent":
                hook["error"] = css_class(env["token_class"].Error)
                hook["start"] = bool(env["start"])
            if parts[1] == "set_indent":
                hook["implicit"] = bool(env["implicit"])
            return hook
        if qual == "RubyLexer.heredoc_callback":
            # The token types are those the callback's code yields.
            return {"hook": "heredoc", "token": css_class(Operator),
                    "heredoc": css_class(String.Heredoc),
                    "delimiter": css_class(String.Delimiter), "error": css_class(Error)}
        for name, ttype, state in (("intp_regex_callback", String.Regex, "interpolated-regex"),
                                   ("intp_string_callback", String.Other, "interpolated-string")):
            if qual == "RubyLexer.gen_rubystrings_rules.<locals>." + name:
                # Group 1 and 4 as `token`, group 3 lexed on its own from
                # `state`.
                return {"hook": "interpolated", "token": css_class(ttype), "state": state}
        raise Unsupported("callback %s" % qual)

    def export(self, cls):
        if cls is JsonLexer:
            # A hand-written scanner, not a rule table: natter has its own
            # port (highlight.rs, `json_tokens`).
            return {"flags": "", "states": {}, "native": "json"}
        if cls is MakefileLexer:
            # Lines of directives and comments set aside, the rest lexed by
            # BaseMakefileLexer, the set-aside lines put back (natter's port:
            # highlight.rs, `make_tokens`).
            return {"flags": "", "states": {}, "native": "make",
                    "make": {"base": self.want(BaseMakefileLexer),
                             "special": translate(cls.r_special.pattern),
                             "comment": translate(cls.r_comment.pattern),
                             "directive": css_class(Comment.Preproc),
                             "remark": css_class(Comment)}}
        extended = issubclass(cls, plexer.ExtendedRegexLexer)
        if not issubclass(cls, plexer.RegexLexer) or (extended and cls.__name__ not in EXTENDED):
            raise Unsupported("not a RegexLexer")
        instance = cls()
        remap = {}
        start = None
        if cls.get_tokens_unprocessed is not plexer.RegexLexer.get_tokens_unprocessed:
            from pygments.lexers.c_cpp import CFamilyLexer
            if issubclass(cls, CFamilyLexer):
                types = set(cls.stdlib_types) | set(cls.c99_types) | set(cls.c11_atomic_types) | set(cls.linux_types)
                remap = {"from": css_class(Name), "to": css_class(Keyword.Type), "words": sorted(types)}
            elif cls is PhpLexer:
                # PHP's built-in functions re-tagged; Zulip highlights with
                # `startinline`, so a block starts inside `<?php`.
                remap = {"from": css_class(Name.Other), "to": css_class(Name.Builtin),
                         "words": sorted(instance._functions)}
                start = ["root", "php"]
            elif cls is YamlLexer:
                # It only starts the indentation context its callbacks keep.
                pass
            elif cls.get_tokens_unprocessed is plexer.ExtendedRegexLexer.get_tokens_unprocessed:
                pass
            else:
                raise Unsupported("own get_tokens_unprocessed")
        tokens = cls._tokens if "_tokens" in cls.__dict__ else instance._tokens
        flags = flag_string(cls.flags)
        states = {}
        for state, rules in tokens.items():
            out = []
            for rexmatch, action, new_state in rules:
                compiled = rexmatch.__self__
                extra = flag_string(compiled.flags & ~cls.flags)
                # `(?:)?` (from `words()`): fancy-regex repeats no empty group.
                pattern = translate(shrink(compiled.pattern)).replace("(?:)?", "")
                if extra:
                    pattern = "(?%s:%s)" % (extra, pattern)
                if isinstance(new_state, tuple):
                    new_state = list(new_state)
                out.append([pattern, self.action(action, cls.__name__), new_state])
            states[state] = out
        entry = {"flags": flags, "states": states}
        if remap:
            entry["remap"] = remap
        if start:
            entry["start"] = start
        if extended:
            # An ExtendedRegexLexer writes the newline no rule matches as
            # Text, a RegexLexer as Whitespace.
            entry["eol"] = css_class(Text)
        return entry

    def run(self, aliases):
        skipped = {}
        for alias in aliases:
            cls = type(get_lexer_by_name(alias))
            try:
                self.export_all(cls)
            except Unsupported as e:
                skipped[alias] = str(e)
        return skipped

    def export_all(self, cls):
        self.pending = [cls]
        done = {}
        while self.pending:
            c = self.pending.pop()
            if c.__name__ in done or c.__name__ in self.lexers:
                continue
            done[c.__name__] = self.export(c)
        self.lexers.update(done)


def all_aliases():
    names = {}
    for name, aliases, _, _ in get_all_lexers():
        for alias in aliases:
            names.setdefault(alias.lower(), name)
    return names


def zulip_html(lang, code):
    """Zulip's code block: Pygments' HTML formatter as
    Python-Markdown's CodeHilite calls it, serialized again by Zulip (which
    turns `&quot;` and `&#39;` back into quotes)."""
    lexer = get_lexer_by_name(lang, startinline=True)
    formatter = HtmlFormatter(cssclass="codehilite", wrapcode=True, startinline=True)
    html = highlight(code.strip("\n"), lexer, formatter).rstrip("\n")
    html = html.replace("&quot;", '"').replace("&#39;", "'")
    name = escape(lexer.name, quote=True).replace("&#x27;", "'")
    return html.replace('<div class="codehilite">',
                        '<div class="codehilite" data-code-language="%s">' % name, 1)


def main():
    if pygments.__version__ != PINNED:
        sys.exit("Pygments %s is pinned; found %s" % (PINNED, pygments.__version__))
    exporter = Exporter()
    skipped = exporter.run(CURATED)
    for alias, why in skipped.items():
        print("skipped %s: %s" % (alias, why), file=sys.stderr)
    highlighted = {}
    for alias in CURATED:
        if alias in skipped:
            continue
        lexer = get_lexer_by_name(alias)
        for a in lexer.aliases:
            highlighted[a.lower()] = type(lexer).__name__
    data = {
        "pygments": pygments.__version__,
        "highlighted": dict(sorted(highlighted.items())),
        "names": dict(sorted(all_aliases().items())),
        "lexers": dict(sorted(exporter.lexers.items())),
    }
    os.makedirs(os.path.join(ROOT, "data", "pygments"), exist_ok=True)
    with open(os.path.join(ROOT, "data", "pygments", "lexers.json"), "w") as f:
        json.dump(data, f, separators=(",", ":"), sort_keys=False)
        f.write("\n")
    if "--fixtures" in sys.argv:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from pygments_corpus import CORPUS
        cases = []
        for lang, code in CORPUS:
            cases.append([lang, code, zulip_html(lang, code)])
        with open(os.path.join(ROOT, "tests", "fixtures", "pygments.json"), "w") as f:
            json.dump(cases, f, indent=0, ensure_ascii=False)
            f.write("\n")


if __name__ == "__main__":
    main()
