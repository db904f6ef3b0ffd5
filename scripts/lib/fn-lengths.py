#!/usr/bin/env python3
"""fn-lengths.py - the length of every C function in a tree, and the most
parameters a function of a given name pattern takes.

A function is a line in column 0 that opens a body ('{' alone at the start
of a line, the project's style, clang-format's BreakBeforeBraces for
functions) after a declarator; its length counts the lines from that
opening brace to the closing '}' at column 0, both included.

  scripts/lib/fn-lengths.py [--max N] [--params REGEX] [--top K] DIR...

Prints the K longest functions (default 5) as "lines file:line name", and
with --params the most parameters any function whose name matches REGEX
takes. Exits 1 when a function is longer than --max (when given).
"""
import argparse
import os
import re
import sys

NAME = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(")


def functions(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.read().split("\n")
    i = 0
    while i < len(lines):
        if lines[i] == "{":
            # The declarator: the lines above, back to a blank line, a
            # comment's end, a preprocessor line or a ';'/'}'.
            j = i - 1
            decl = []
            while j >= 0:
                s = lines[j]
                if not s.strip() or s.startswith("#") or s.rstrip().endswith(("*/", ";", "}")):
                    break
                decl.insert(0, s)
                j -= 1
            text = " ".join(decl)
            m = NAME.search(text)
            end = i + 1
            while end < len(lines) and lines[end] != "}":
                end += 1
            if m and "=" not in text.split("(")[0]:
                params = text[text.index("(") + 1 : text.rindex(")")] if ")" in text else ""
                n = 0 if params.strip() in ("", "void") else params.count(",") + 1
                yield m.group(1), i + 1, end - i + 1, n
            i = end
        i += 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--max", type=int)
    ap.add_argument("--params")
    ap.add_argument("--top", type=int, default=5)
    a = ap.parse_args()
    rows = []
    for d in a.dirs:
        for root, _, files in os.walk(d):
            for fn in sorted(files):
                if fn.endswith((".c", ".h")):
                    p = os.path.join(root, fn)
                    rows += [(n, p, line, name, k) for name, line, n, k in functions(p)]
    rows.sort(key=lambda r: -r[0])
    for n, p, line, name, _ in rows[: a.top]:
        print(f"{n:4d} {p}:{line} {name}")
    if a.params:
        pat = re.compile(a.params)
        most = max(((k, name) for _, _, _, name, k in rows if pat.search(name)), default=(0, "-"))
        print(f"parameters: at most {most[0]} ({most[1]}) among functions matching {a.params}")
    if a.max is not None and rows and rows[0][0] > a.max:
        print(f"longer than {a.max} lines: {sum(1 for r in rows if r[0] > a.max)} function(s)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
