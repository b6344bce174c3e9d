#!/usr/bin/env python3
"""Regenerates tlds.txt from the Public Suffix List (Debian's `publicsuffix`
package installs it): the ICANN section's names without a dot, ASCII only,
less the file extensions Zulip leaves out of its autolink rule."""
import re
import sys

SOURCE = sys.argv[1] if len(sys.argv) > 1 else "/usr/share/publicsuffix/public_suffix_list.dat"
EXCLUDED = {"java", "md", "mov", "py", "zip"}

names, icann = set(), False
for line in open(SOURCE, encoding="utf-8"):
    line = line.strip()
    if "BEGIN ICANN DOMAINS" in line:
        icann = True
    elif "END ICANN DOMAINS" in line:
        icann = False
    elif icann and line and not line.startswith("//") and re.fullmatch(r"[a-z0-9-]+", line):
        names.add(line)

with open(__file__.replace("tlds.py", "tlds.txt"), "w") as out:
    out.write(
        "# Top-level domains a bare domain may end in to be linked (Zulip's rule),\n"
        "# one a line: the ICANN section of the Public Suffix List, names without a\n"
        "# dot, ASCII only, less Zulip's file-extension false positives (java, md,\n"
        "# mov, py, zip). Regenerate with src/markdown/tlds.py.\n"
    )
    out.write("\n".join(sorted(names - EXCLUDED)) + "\n")
