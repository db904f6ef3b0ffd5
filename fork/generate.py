#!/usr/bin/env python3
"""Generate the fork's C files from opmsg's src/ (fork/README.md, docs/design.md).

The wire rules, the merger, the array writer and the CRC-32C exist once, in
src/. A fork series carries them as generated files: this script reads our
sources, keeps what a manifest's entry points reach, renames it to the
target's conventions, and writes it in the target's style.

  fork/generate.py TARGET --stage N --out DIR [--clang-format BIN] [--style FILE]
  fork/generate.py TARGET --list          the stages and what each one generates
  fork/generate.py TARGET --clang-format-pin   the clang-format version of the target

TARGET names fork/TARGET/generate.json (the manifest). Stage N is the N-th
commit of the series (1-based); its files are written under DIR at their
paths in the upstream tree. With --clang-format and --style the result is
formatted with that clang-format and that .clang-format (the tree's own).

How it works:
1. Split. Every C file (src/*.c, src/*.h, include/opmsg/*.h) is cut into
   top-level items: functions, prototypes, types, macros, enums, data. The
   splitter knows our clang-formatted style and nothing else: what it does
   not recognise stops the run, naming the file and line.
2. Close. From the stage's entry points, every item they reference, and
   every item those reference, is collected; nothing else is kept.
3. Rename. Entry points get the names the manifest gives them and a
   prototype in the generated header; everything else becomes static with a
   leading underscore, types and constants take the target's prefix, and
   the target's substitutions (branch prediction, inline, static asserts)
   replace our portability macros.
4. Write. Items in dependency order (forward declarations only for cycles),
   under the target's license header and a line naming this script, then
   formatted. The output depends only on the sources and the manifest, so
   it is the same bytes every time.

Python 3 standard library only.
"""

import argparse
import glob
import json
import os
import re
import subprocess
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class GenError(Exception):
    pass


def fail(msg):
    raise GenError(msg)


# ---------------------------------------------------------------------------
# Lexer
# ---------------------------------------------------------------------------

TOKEN_RE = re.compile(
    r"""
    (?P<ws>[ \t\r\f\v]+)
  | (?P<nl>\n)
  | (?P<bcomment>/\*.*?\*/)
  | (?P<lcomment>//[^\n]*)
  | (?P<string>"(?:\\.|[^"\\\n])*")
  | (?P<char>'(?:\\.|[^'\\\n])+')
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<number>\.?[0-9](?:[0-9A-Za-z_.]|[eEpP][+-])*)
  | (?P<punct>->|\.\.\.|<<=|>>=|\+\+|--|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&|^!~<>=?:;,.(){}\[\]\#\\])
    """,
    re.VERBOSE | re.DOTALL,
)


class Tok:
    __slots__ = ("kind", "text", "pos", "line")

    def __init__(self, kind, text, pos, line):
        self.kind = kind
        self.text = text
        self.pos = pos
        self.line = line

    def __repr__(self):
        return "%s(%r)@%d" % (self.kind, self.text, self.line)


def lex(src, path):
    """Tokens of src; a preprocessor directive (with its continuation lines)
    is one token of kind 'pp'."""
    toks = []
    pos = 0
    line = 1
    at_line_start = True
    n = len(src)
    while pos < n:
        if at_line_start:
            m = re.match(r"[ \t]*#", src[pos:pos + 200])
            if m:
                # A directive runs to the first newline not escaped by "\";
                # comments inside it stay part of it.
                end = pos
                while True:
                    nl = src.find("\n", end)
                    if nl < 0:
                        nl = n
                        break
                    if src[nl - 1] == "\\":
                        end = nl + 1
                        continue
                    # A block comment opened on this line and still open.
                    seg = src[pos:nl]
                    if seg.count("/*") > seg.count("*/"):
                        close = src.find("*/", nl)
                        if close < 0:
                            fail("%s:%d: unterminated comment in a directive" % (path, line))
                        end = close + 2
                        continue
                    break
                text = src[pos:nl]
                toks.append(Tok("pp", text, pos, line))
                line += text.count("\n")
                pos = nl
                continue
        m = TOKEN_RE.match(src, pos)
        if not m:
            fail("%s:%d: cannot read %r" % (path, line, src[pos:pos + 20]))
        kind = m.lastgroup
        text = m.group(0)
        if kind == "nl":
            at_line_start = True
            line += 1
        elif kind == "ws":
            pass
        else:
            at_line_start = False
            toks.append(Tok(kind, text, pos, line))
            line += text.count("\n")
        pos = m.end()
    return toks


# ---------------------------------------------------------------------------
# Items
# ---------------------------------------------------------------------------


class Item:
    """One top-level item of a source file."""

    def __init__(self, path, kind, start, end, toks, comment):
        self.path = path
        self.kind = kind  # function, proto, type, macro, data, extern, assert, cond
        self.start = start  # source offsets of the code (comment excluded)
        self.end = end
        self.toks = toks  # the item's code tokens (comments included)
        self.comment = comment  # the leading comment's text, or None
        self.names = []  # what it defines
        self.is_static = False
        self.order = 0

    @property
    def line(self):
        return self.toks[0].line if self.toks else 0

    def where(self):
        return "%s:%d" % (self.path, self.line)

    def code_tokens(self):
        return [t for t in self.toks if t.kind not in ("bcomment", "lcomment")]


def significant(toks):
    return [t for t in toks if t.kind not in ("bcomment", "lcomment")]


PP_NAME_RE = re.compile(r"[ \t]*#[ \t]*([a-z]+)\b[ \t]*(.*)", re.DOTALL)


def pp_parts(text):
    m = PP_NAME_RE.match(text)
    if not m:
        fail("unreadable directive %r" % text)
    return m.group(1), m.group(2)


def split_items(src, path):
    """Cuts a file into items. Stops at anything outside our style."""
    toks = lex(src, path)
    items = []
    i = 0
    n = len(toks)
    pending_comment = None  # (text, end line) of comments right above
    header_guard = None
    is_header = path.endswith(".h")
    # Top-level #ifdef MACRO blocks around code (a codec built only with its
    # library): the macros in force, innermost last; each item made inside
    # records them in .requires, and a target that never defines them
    # ("undefined" in its manifest) never sees those items.
    cond_stack = []

    def comment_for(first_line):
        if pending_comment and pending_comment[1] == first_line - 1:
            return pending_comment[0]
        return None

    while i < n:
        t = toks[i]
        if t.kind in ("bcomment", "lcomment"):
            # Consecutive comments on adjacent lines form one block.
            end_line = t.line + t.text.count("\n")
            if pending_comment and pending_comment[1] == t.line - 1 and t.kind == "lcomment":
                pending_comment = (pending_comment[0] + "\n" + t.text, end_line)
            else:
                pending_comment = (t.text, end_line)
            i += 1
            continue
        if t.kind == "pp":
            name, rest = pp_parts(t.text)
            if name == "include" or name == "pragma":
                pending_comment = None
                i += 1
                continue
            if is_header and header_guard is None and name == "ifndef" and not items:
                header_guard = rest.strip()
                pending_comment = None
                i += 1
                continue
            if name == "define" and header_guard and rest.split()[0] == header_guard:
                i += 1
                continue
            if name == "endif" and header_guard and i == n - 1:
                i += 1
                continue
            if name == "endif" and cond_stack:
                cond_stack.pop()
                pending_comment = None
                i += 1
                continue
            if name == "define":
                m = re.match(r"([A-Za-z_][A-Za-z0-9_]*)", rest)
                if not m:
                    fail("%s:%d: unreadable #define" % (path, t.line))
                item = Item(path, "macro", t.pos, t.pos + len(t.text), [t], comment_for(t.line))
                item.names = [m.group(1)]
                items.append(item)
                pending_comment = None
                i += 1
                continue
            if name == "undef":
                macro = rest.split()[0]
                # The local macros of a table: #define ... the item ... #undef.
                if items and macro in getattr(items[-1], "local_macros", ()):
                    items[-1].toks.append(t)
                    items[-1].end = t.pos + len(t.text)
                    i += 1
                    continue
                for k in range(len(items) - 1, -1, -1):
                    if items[k].kind == "macro" and items[k].names == [macro]:
                        break
                else:
                    fail("%s:%d: #undef %s of no macro defined in this file" % (path, t.line, macro))
                group = items[k:]
                merged = Item(path, "local", group[0].start, t.pos + len(t.text),
                              [tok for it in group for tok in it.toks] + [t], group[0].comment)
                for it in group:
                    if it.kind != "macro":
                        merged.names.extend(it.names)
                        merged.kind = it.kind if merged.kind == "local" else merged.kind
                merged.local_macros = sorted({it.names[0] for it in group if it.kind == "macro"})
                if merged.kind == "local":
                    merged.kind = "macro"
                items[k:] = [merged]
                i += 1
                continue
            if name == "ifdef" and rest.strip() == "__cplusplus":
                # extern "C" { ... }: C++ linkage, nothing to generate.
                j = i + 1
                while j < n and not (toks[j].kind == "pp" and pp_parts(toks[j].text)[0] == "endif"):
                    j += 1
                pending_comment = None
                i = j + 1
                continue
            if name in ("if", "ifdef", "ifndef"):
                # A conditional block at the top level: one item, the names it
                # #defines; includes inside it are the manifest's business.
                depth = 0
                j = i
                while j < n:
                    if toks[j].kind == "pp":
                        nm, _ = pp_parts(toks[j].text)
                        if nm in ("if", "ifdef", "ifndef"):
                            depth += 1
                        elif nm == "endif":
                            depth -= 1
                            if depth == 0:
                                break
                    j += 1
                if j == n:
                    fail("%s:%d: #%s without #endif" % (path, t.line, name))
                block = toks[i:j + 1]
                defines = []
                others = False
                for b in block:
                    if b.kind != "pp":
                        if b.kind not in ("bcomment", "lcomment"):
                            others = True
                        continue
                    nm, r = pp_parts(b.text)
                    if nm == "define":
                        defines.append(re.match(r"([A-Za-z_][A-Za-z0-9_]*)", r).group(1))
                    elif nm not in ("if", "ifdef", "ifndef", "elif", "else", "endif", "include"):
                        fail("%s:%d: #%s inside a top-level conditional" % (path, b.line, nm))
                if others:
                    plain = [b for b in block[1:-1] if b.kind == "pp" and
                             pp_parts(b.text)[0] in ("if", "ifdef", "ifndef", "elif", "else", "endif")]
                    if name != "ifdef" or any(pp_parts(b.text)[0] in ("elif", "else") for b in plain):
                        fail("%s:%d: code inside a top-level #%s block: only #ifdef MACRO ... #endif "
                             "around whole items is understood" % (path, t.line, name))
                    # Split what lies inside as items that require the macro.
                    cond_stack.append(rest.strip())
                    pending_comment = None
                    i += 1
                    continue
                if defines:
                    item = Item(path, "cond", t.pos, block[-1].pos + len(block[-1].text), block,
                                comment_for(t.line))
                    item.names = sorted(set(defines))
                    items.append(item)
                pending_comment = None
                i = j + 1
                continue
            fail("%s:%d: directive #%s at the top level: not understood" % (path, t.line, name))

        # Code: up to the end of the item.
        j = i
        depth = 0
        body = False
        prev = None
        while j < n:
            tk = toks[j]
            if tk.kind == "punct":
                if tk.text in "([{":
                    if tk.text == "{" and depth == 0 and prev is not None and prev.text == ")":
                        body = True
                    depth += 1
                elif tk.text in ")]}":
                    depth -= 1
                    if depth < 0:
                        fail("%s:%d: unbalanced %s" % (path, tk.line, tk.text))
                    if depth == 0 and tk.text == "}" and body:
                        break
                elif tk.text == ";" and depth == 0:
                    break
            if tk.kind not in ("bcomment", "lcomment", "pp"):
                prev = tk
            j += 1
        if j == n:
            fail("%s:%d: item without an end" % (path, t.line))
        # A comment on the closing line belongs to the item.
        end_tok = j
        while end_tok + 1 < n and toks[end_tok + 1].kind in ("bcomment", "lcomment") and \
                toks[end_tok + 1].line == toks[j].line:
            end_tok += 1
        item_toks = toks[i:end_tok + 1]
        item = Item(path, "?", t.pos, toks[end_tok].pos + len(toks[end_tok].text), item_toks, comment_for(t.line))
        item.requires = tuple(cond_stack)
        classify(item, body)
        items.append(item)
        pending_comment = None
        i = end_tok + 1
    if cond_stack:
        fail("%s: #ifdef %s without #endif" % (path, cond_stack[-1]))
    for k, it in enumerate(items):
        it.order = k
    return items


STORAGE = {"static", "inline", "extern", "const", "volatile", "unsigned", "signed", "struct", "enum", "union"}


def classify(item, body):
    sig = item.code_tokens()
    texts = [t.text for t in sig]
    where = item.where()
    if texts[0] == "_Static_assert":
        item.kind = "assert"
        return
    item.is_static = "static" in texts[:6]
    if body:
        item.kind = "function"
        item.names = [function_name(sig, where)]
        return
    if texts[0] == "typedef":
        item.kind = "type"
        names = []
        # typedef struct tag { ... } name;  typedef T (*name)(...);
        if len(texts) > 2 and texts[1] in ("struct", "enum", "union") and sig[2].kind == "ident":
            names.append(texts[1] + " " + texts[2])
        fp = None
        for k in range(len(texts) - 3):
            if texts[k] == "(" and texts[k + 1] == "*" and sig[k + 2].kind == "ident" and texts[k + 3] == ")":
                fp = texts[k + 2]
                break
        if fp:
            names.append(fp)
        else:
            if sig[-2].kind != "ident":
                fail("%s: typedef not understood" % where)
            names.append(texts[-2])
        if "enum" in texts[:2]:
            names.extend(enum_constants(sig, where))
        item.names = names
        return
    if texts[0] in ("struct", "union") and texts[2] == "{":
        item.kind = "type"
        item.names = [texts[0] + " " + texts[1]]
        return
    if texts[0] == "enum" and ("{" in texts[:3]):
        item.kind = "type"
        item.names = enum_constants(sig, where)
        if sig[1].kind == "ident":
            item.names.append("enum " + texts[1])
        return
    # A declaration: a function prototype or a variable.
    depth = 0
    first_paren = None
    for k, t in enumerate(sig):
        if t.text in ("(", "[", "{"):
            if t.text == "(" and depth == 0 and first_paren is None:
                first_paren = k
            depth += 1
        elif t.text in (")", "]", "}"):
            depth -= 1
        elif t.text == "=" and depth == 0 and first_paren is None:
            break
    if first_paren is not None and "=" not in texts[:first_paren]:
        item.kind = "proto"
        item.names = [function_name(sig, where)]
        return
    item.kind = "extern" if texts[0] == "extern" else "data"
    for k, t in enumerate(sig):
        if t.text in ("[", "=", ";"):
            if sig[k - 1].kind != "ident":
                fail("%s: declaration not understood" % where)
            item.names = [sig[k - 1].text]
            return
    fail("%s: declaration not understood" % where)


def function_name(sig, where):
    for k, t in enumerate(sig):
        if t.text == "(":
            if k == 0 or sig[k - 1].kind != "ident":
                fail("%s: function not understood" % where)
            return sig[k - 1].text
    fail("%s: function without parameters" % where)


def enum_constants(sig, where):
    names = []
    k = [t.text for t in sig].index("{") + 1
    expect = True
    depth = 0
    while k < len(sig) and not (sig[k].text == "}" and depth == 0):
        t = sig[k]
        if t.text in ("(", "["):
            depth += 1
        elif t.text in (")", "]"):
            depth -= 1
        elif t.text == "," and depth == 0:
            expect = True
        elif expect:
            if t.kind != "ident":
                fail("%s: enum not understood" % where)
            names.append(t.text)
            expect = False
        k += 1
    return names


def member_tokens(item):
    """The tokens that name the members a struct or union declares (its
    fields are not the program's names, whatever they are called)."""
    cached = getattr(item, "_members", None)
    if cached is not None:
        return cached
    members = set()
    if item.kind == "type":
        sig = item.code_tokens()
        depth = 0
        decl = []  # tokens of the member declaration being read
        record = []  # whether each enclosing brace opens a struct or union
        for k, t in enumerate(sig):
            if t.text == "{":
                opener = sig[k - 1].text if k else ""
                opener2 = sig[k - 2].text if k > 1 else ""
                record.append(opener in ("struct", "union") or opener2 in ("struct", "union"))
                depth += 1
                decl = []
                continue
            if t.text == "}":
                depth -= 1
                record.pop()
                decl = []
                continue
            if depth == 0 or not record or not record[-1]:
                continue
            if t.text in (";", ","):
                name = declarator_name(decl)
                if name is not None:
                    members.add(id(name))
                decl = [] if t.text == ";" else [x for x in decl if x.kind == "ident"][:0]
                continue
            decl.append(t)
    item._members = members
    return members


def declarator_name(decl):
    """The name a member declaration declares: the identifier inside
    (*name) for a function pointer, else the last one before [ or :."""
    for k in range(len(decl) - 2):
        if decl[k].text == "(" and decl[k + 1].text == "*" and decl[k + 2].kind == "ident":
            return decl[k + 2]
    last = None
    depth = 0
    for t in decl:
        if t.text in ("[", "("):
            depth += 1
        elif t.text in ("]", ")"):
            depth -= 1
        elif t.text == ":" and depth == 0:
            break
        elif t.kind == "ident" and depth == 0:
            last = t
    return last


def references(item):
    """Identifiers the item uses (not member names after . or ->, nor the
    members a struct declares), with the identifiers inside its directives."""
    refs = set()
    prev = None
    members = member_tokens(item)
    for t in item.toks:
        if t.kind == "ident":
            if id(t) in members:
                pass
            elif not (prev is not None and prev.kind == "punct" and prev.text in (".", "->")):
                refs.add(t.text)
        elif t.kind == "pp":
            for m in re.finditer(r"[A-Za-z_][A-Za-z0-9_]*", strip_comments(t.text)):
                refs.add(m.group(0))
        if t.kind not in ("bcomment", "lcomment"):
            prev = t
        if t.kind == "ident" and t.text in ("struct", "enum", "union"):
            pass
    # struct tags: "struct x" is one name.
    sig = item.code_tokens()
    for k in range(len(sig) - 1):
        if sig[k].text in ("struct", "enum", "union") and sig[k + 1].kind == "ident":
            refs.add(sig[k].text + " " + sig[k + 1].text)
    return refs


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.DOTALL)
    return re.sub(r"//[^\n]*", " ", text)


# ---------------------------------------------------------------------------
# The program: every item of every source, and the names they define
# ---------------------------------------------------------------------------


def expand_sources(patterns, root):
    """The manifest's source list: paths or globs relative to the root, in
    order; "!pattern" removes what an earlier pattern added."""
    out = []
    for pat in patterns:
        if pat.startswith("!"):
            drop = set(os.path.relpath(p, root) for p in glob.glob(os.path.join(root, pat[1:])))
            out = [p for p in out if p not in drop]
            continue
        found = sorted(os.path.relpath(p, root) for p in glob.glob(os.path.join(root, pat)))
        if not found:
            fail("source %s matches no file" % pat)
        out.extend(p for p in found if p not in out)
    return out


class Program:
    def __init__(self, sources, root, undefined=()):
        self.items = []
        self.by_file = {}
        for rel in expand_sources(sources, root):
            with open(os.path.join(root, rel), encoding="utf-8") as f:
                src = f.read()
            # Code built only with a macro the target never defines does not
            # exist for it.
            its = [it for it in split_items(src, rel)
                   if not set(getattr(it, "requires", ())) & set(undefined)]
            for it in its:
                it.src = src
                it.file_rank = len(self.by_file)
            self.by_file[rel] = its
            self.items.extend(its)
        # name -> items defining it (a function's definition, its prototypes)
        self.defs = {}
        self.protos = {}
        for it in self.items:
            for name in it.names:
                if it.kind == "proto" or it.kind == "extern":
                    self.protos.setdefault(name, []).append(it)
                else:
                    self.defs.setdefault(name, []).append(it)

    def definition(self, name, referrer):
        """The item that defines name for an item of referrer's file: its own
        file's static first (C's rule), else the one non-static definition."""
        cands = self.defs.get(name)
        if not cands:
            return None
        if len(cands) == 1:
            return cands[0]
        same = [c for c in cands if c.path == referrer.path]
        if len(same) == 1:
            return same[0]
        public = [c for c in cands if not c.is_static]
        if len(public) == 1:
            return public[0]
        fail("%s: %s has %d definitions (%s); cannot tell which one is meant" %
             (referrer.where(), name, len(cands), ", ".join(c.where() for c in cands)))


# ---------------------------------------------------------------------------
# Generation
# ---------------------------------------------------------------------------


def load_manifest(target):
    path = os.path.join(TOP, "fork", target, "generate.json")
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def stage_groups(manifest, stage):
    """{unit: [groups]} at the stage-th commit (1-based): the groups each
    commit adds accumulate."""
    commits = manifest["commits"]
    if stage < 1 or stage > len(commits):
        fail("stage %d: the series has %d commits" % (stage, len(commits)))
    units = {}
    for c in commits[:stage]:
        for unit, groups in c.get("adds", {}).items():
            units.setdefault(unit, [])
            for g in groups:
                if g not in units[unit]:
                    units[unit].append(g)
    return units


class Unit:
    """One generated pair of files (NAME.c, NAME.h)."""

    def __init__(self, name, spec, entries):
        self.name = name
        self.spec = spec
        self.entries = entries  # our name -> target name, in manifest order


def generate(manifest, stage, clang_format=None, style=None, root=TOP):
    target = manifest["target"]
    program = Program(manifest["sources"], root, target.get("undefined", []))
    SUBST_NAMES.clear()
    SUBST_NAMES.update(target.get("substitute", {}))
    COMMENT_EDITS[:] = [(re.compile(p), r) for p, r in target.get("comment_edits", [])]
    COMMENT_EDITS.extend((phrase_re(p), r) for p, r in target.get("comment_phrases", []))
    COMMENT_FORBID[:] = [re.compile(target["comment_forbid"])] if "comment_forbid" in target else []
    units = []
    groups = stage_groups(manifest, stage)
    for uname in manifest["units"]:
        if uname not in groups:
            continue
        spec = manifest["units"][uname]
        entries = {}
        for g in spec["groups"]:
            if g in groups[uname]:
                entries.update(spec["groups"][g])
        units.append(Unit(uname, spec, entries))

    # Names that later units reach in earlier ones: external there.
    provided = {}
    outputs = {}
    for unit in units:
        files = emit_unit(program, target, unit, provided)
        outputs.update(files)
        for ours, theirs in unit.entries.items():
            provided[ours] = (unit, theirs)
    if clang_format:
        for path in sorted(outputs):
            outputs[path] = run_clang_format(clang_format, style, path, outputs[path])
    return outputs


SUBST_NAMES = set()


def closure(program, unit, provided, extra_roots):
    roots = []
    for name in list(unit.entries) + list(extra_roots):
        it = program.defs.get(name)
        if not it:
            fail("%s: entry point %s is defined nowhere in the sources" % (unit.name, name))
        if len(it) != 1:
            fail("%s: entry point %s has %d definitions" % (unit.name, name, len(it)))
        roots.append(it[0])
    seen = {}
    external = set()
    stack = list(roots)
    deps = {}
    while stack:
        it = stack.pop()
        if id(it) in seen:
            continue
        if getattr(it, "requires", ()):
            fail("%s: %s is built only with %s, which the target's manifest does not list as undefined" %
                 (it.where(), it.names[0] if it.names else "an item", " and ".join(it.requires)))
        seen[id(it)] = it
        deps[id(it)] = []
        for ref in sorted(references(it)):
            if ref in it.names:
                continue
            if ref in SUBST_NAMES:
                continue  # the target's own macro replaces ours
            if ref in provided and ref not in unit.entries:
                external.add(ref)
                continue
            d = program.definition(ref, it)
            if d is None or d is it:
                continue
            deps[id(it)].append(d)
            stack.append(d)
    return list(seen.values()), deps, external


def emit_unit(program, target, unit, provided):
    items, deps, external = closure(program, unit, provided, unit.spec.get("roots", []))
    names = {}
    for it in items:
        for nm in it.names:
            names[nm] = it
    rename = make_renames(target, unit, names, provided)

    # Header: the entry points' prototypes and what their signatures need.
    entry_items = [program.defs[n][0] for n in unit.entries]
    wanted = list(unit.spec.get("header", []))
    for it in entry_items:
        wanted.extend(ref for ref in sorted(signature_refs(it)) if ref in names and names[ref].kind != "function")
    header_ids = set()
    header_items = []
    stack = wanted[::-1]
    while stack:
        nm = stack.pop()
        it = names.get(nm)
        if it is None:
            # A type the manifest puts in the header that no entry point reached.
            d = program.defs.get(nm)
            if not d:
                fail("%s: header name %s is defined nowhere" % (unit.name, nm))
            it = d[0]
            items.append(it)
            deps[id(it)] = []
            for nm2 in it.names:
                names[nm2] = it
        if id(it) in header_ids:
            continue
        header_ids.add(id(it))
        header_items.append(it)
        for ref in sorted(references(it)):
            if ref in names and ref not in it.names and names[ref].kind != "function":
                stack.append(ref)
    rename = make_renames(target, unit, names, provided)

    order = topo_order(items, deps)
    body_items = [it for it in order if id(it) not in header_ids]
    head_items = [it for it in order if id(it) in header_ids]

    subst = target.get("substitute", {})
    undefined = set(target.get("undefined", []))

    def code(it):
        return render(program, it, rename, subst, undefined, unit.entries, target)

    spec = unit.spec
    c_path, h_path = unit_paths(unit.name, spec)
    note = target["generated_note"].format(
        sources=", ".join(sorted({it.path for it in items})))

    # Forward declarations for functions used before their definition.
    defined = set()
    forward = []
    for it in body_items:
        if it.kind == "function":
            for d in deps[id(it)]:
                if d.kind == "function" and id(d) not in defined and d is not it and \
                        d.names[0] not in unit.entries:
                    forward.append(d)
            defined.add(id(it))
    fwd_text = []
    seen_fwd = set()
    for d in forward:
        if id(d) in seen_fwd:
            continue
        seen_fwd.add(id(d))
        fwd_text.append(prototype_text(program, d, rename, subst, undefined, unit.entries, static=True) + ";")

    guard = spec["guard"]
    h = [target["license"], note, ""]
    # What the target's headers include before their guard (libmongoc 1.23's
    # prelude).
    for inc in spec.get("header_includes_first", []):
        h += ["#include %s" % inc, ""]
    h += ["#ifndef " + guard, "#define " + guard, ""]
    h += ["#include %s" % inc for inc in spec.get("header_includes", [])]
    h.append("")
    for it in head_items:
        h.append(code(it))
        h.append("")
    for ours, theirs in unit.entries.items():
        it = program.defs[ours][0]
        comment = doc_comment(program, ours)
        if comment:
            h.append(rename_comment(comment, rename))
        h.append(prototype_text(program, it, rename, subst, undefined, unit.entries, static=False) + ";")
        h.append("")
    h.append("#endif /* %s */" % guard)

    c = [target["license"], note, ""]
    c += ["#include %s" % inc for inc in spec.get("includes", [])]
    c.append("")
    for block in spec.get("includes_conditional", []):
        c.append(block)
        c.append("")
    if fwd_text:
        c += fwd_text
        c.append("")
    for it in body_items:
        c.append(code(it))
        c.append("")
    return {h_path: "\n".join(h).rstrip() + "\n", c_path: "\n".join(c).rstrip() + "\n"}


def unit_paths(name, spec):
    """A unit's .c and header, at their places in the upstream tree: NAME.c
    and NAME.h, or the header the manifest names ("header_file": libmongoc
    1.23's NAME-private.h)."""
    return (spec["dir"] + "/" + name + ".c", spec["dir"] + "/" + spec.get("header_file", name + ".h"))


def signature_refs(it):
    sig = it.code_tokens()
    refs = set()
    for t in sig:
        if t.text == "{":
            break
        if t.kind == "ident":
            refs.add(t.text)
    return refs


def doc_comment(program, name):
    """The comment above a function's prototype in a header, else above its
    definition."""
    for p in program.protos.get(name, []):
        if p.comment:
            return p.comment
    d = program.defs.get(name)
    return d[0].comment if d else None


def topo_order(items, deps):
    """Dependencies first; otherwise the sources' order (the manifest's file
    order, then the position in the file)."""
    rank = {}
    for it in items:
        rank[id(it)] = (it.file_rank, it.order)
    ordered = []
    state = {}
    for it in sorted(items, key=lambda x: rank[id(x)]):
        visit(it, deps, state, ordered, rank)
    return ordered


def visit(it, deps, state, ordered, rank):
    s = state.get(id(it))
    if s == 2 or s == 1:
        return  # done, or a cycle (forward declarations break it)
    state[id(it)] = 1
    for d in sorted(deps.get(id(it), []), key=lambda x: rank[id(x)]):
        # A function may follow its callers (a forward declaration); a type,
        # macro or table may not.
        if d.kind == "function" and it.kind == "function":
            continue
        visit(d, deps, state, ordered, rank)
    for d in sorted(deps.get(id(it), []), key=lambda x: rank[id(x)]):
        if d.kind == "function" and it.kind == "function":
            visit(d, deps, state, ordered, rank)
    state[id(it)] = 2
    ordered.append(it)


def make_renames(target, unit, names, provided):
    rn = {}
    pre = target["prefix"]  # e.g. {"function": "_", "type": "mcd_opmsg_", "macro": "MCD_OPMSG_"}
    for name, it in names.items():
        if " " in name:
            tag, base = name.split(" ", 1)
            rn[name] = tag + " " + rename_one(base, it, pre, unit)
            continue
        rn[name] = rename_one(name, it, pre, unit)
    for ours, (u, theirs) in provided.items():
        rn.setdefault(ours, theirs)
    for ours, theirs in unit.entries.items():
        rn[ours] = theirs
    for nm, new in target.get("renames", {}).items():
        if nm in rn:
            rn[nm] = new
    # Two of our names must not become one of theirs.
    seen = {}
    for ours, theirs in rn.items():
        if theirs in seen and seen[theirs] != ours:
            fail("%s: %s and %s would both be called %s (add a rename to the manifest)" %
                 (unit.name, seen[theirs], ours, theirs))
        seen[theirs] = ours
    return rn


def rename_one(name, it, pre, unit):
    if name in unit.entries:
        return unit.entries[name]
    if re.match(r"OPMSG_[A-Z0-9_]*$", name):
        return pre["macro"] + name[len("OPMSG_"):]
    if name.startswith("opmsg_") and name.endswith("_t") and it.kind == "type":
        return pre["type"] + name[len("opmsg_"):]
    if it.kind in ("function", "data", "extern"):
        base = name[len("opmsg_"):] if name.startswith("opmsg_") else name
        return pre["function"] + base
    if name.startswith("opmsg_"):
        return pre["type"] + name[len("opmsg_"):]
    return name


IDENT_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


COMMENT_EDITS = []
COMMENT_FORBID = []


def phrase_re(phrase):
    """A comment phrase of the manifest as a pattern: its words in order,
    across any line break of the comment (a continuation line's "*" too)."""
    return re.compile(r"\s+(?:\*\s+)?".join(re.escape(w) for w in phrase.split()))


def rename_comment(text, rename):
    """A comment with our names renamed, and the target's edits made (words
    that only mean something in our tree, such as "Core entry point"). What
    the target forbids in its comments (our file names, names it does not
    get) stops the run: the reviewer of the generated file cannot look them
    up."""
    def sub(m):
        w = m.group(0)
        if w in rename and ("_" in w or w.startswith("opmsg")):
            return rename[w]
        return w
    for pattern, replacement in COMMENT_EDITS:
        text = re.sub(pattern, replacement, text)
    text = IDENT_RE.sub(sub, text)
    for forbid in COMMENT_FORBID:
        found = sorted({m.group(0) for m in forbid.finditer(text)})
        if found:
            fail("a generated comment names what only means something in our tree (%s): add a comment edit "
                 "to the manifest or reword the source:\n%s" % (", ".join(found), text))
    return text


def render(program, it, rename, subst, undefined, entries, target):
    """The item's text, renamed and with the target's substitutions, static
    unless it is an entry point."""
    out = []
    if it.comment:
        out.append(rename_comment(it.comment, rename))
    if it.kind == "function":
        extra = None
        for p in program.protos.get(it.names[0], []):
            if p.comment and p.comment != it.comment:
                extra = p.comment
        if extra:
            out.insert(0, rename_comment(extra, rename))
    text = render_tokens(it, rename, subst, undefined)
    if it.kind in ("function", "data") and it.names[0] not in entries:
        if not it.is_static:
            # After the table's local #defines, if it has any.
            lines = text.split("\n")
            k = 0
            while lines[k].lstrip().startswith("#"):
                k += 1
            lines[k] = "static " + lines[k]
            text = "\n".join(lines)
    elif it.kind == "function" and it.names[0] in entries:
        text = re.sub(r"^(static\s+|inline\s+)+", "", text)
    if it.kind == "extern":
        fail("%s: extern declaration %s reached without its definition" % (it.where(), it.names[0]))
    if it.kind == "assert":
        text = static_assert(it, text, target)
    out.append(text)
    return "\n".join(out)


def static_assert(it, text, target):
    form = target.get("static_assert")
    m = re.match(r"_Static_assert\s*\((.*),\s*(\"(?:\\.|[^\"])*\")\s*\)\s*;\s*$", text, re.DOTALL)
    if not m:
        fail("%s: _Static_assert not understood" % it.where())
    if not form:
        return text
    name = re.sub(r"[^a-z0-9]+", "_", m.group(2).strip('"').lower()).strip("_")
    return form.format(name=name, cond=m.group(1).strip()) + ";"


def render_tokens(it, rename, subst, undefined):
    """Rebuilds the item's source text with identifiers renamed; the text
    between tokens (spacing, newlines) is kept, so comments stay in place."""
    src = it.src
    toks = it.toks
    pieces = []
    last = it.start
    prev = None
    members = member_tokens(it)
    for t in toks:
        pieces.append(src[last:t.pos])
        text = t.text
        if t.kind == "ident":
            member = (prev is not None and prev.kind == "punct" and prev.text in (".", "->")) or id(t) in members
            if text in subst and not member:
                text = subst[text]
            elif text in rename and not member:
                text = rename[text]
        elif t.kind == "pp":
            text = rename_directive(text, rename, subst)
        elif t.kind in ("bcomment", "lcomment"):
            text = rename_comment(text, rename)
        pieces.append(text)
        last = t.pos + len(t.text)
        if t.kind not in ("bcomment", "lcomment"):
            prev = t
    text = "".join(pieces)
    text = drop_undefined_branches(text, undefined, it)
    # Attributes that became empty leave doubled spaces: clang-format
    # rewrites the spacing anyway.
    return text


def rename_directive(text, rename, subst):
    def sub(m):
        w = m.group(0)
        if w in subst:
            return subst[w]
        return rename.get(w, w)
    # Keep comments inside the directive readable but renamed.
    return IDENT_RE.sub(sub, text)


def drop_undefined_branches(text, undefined, it):
    """#ifdef X ... [#else ...] #endif with X a macro the target never
    defines: the #else branch only. Other conditionals are kept."""
    if not undefined:
        return text
    lines = text.split("\n")
    out = []
    stack = []  # per open conditional: (ours, keeping)
    for ln in lines:
        m = re.match(r"\s*#\s*(ifdef|ifndef|if|elif|else|endif)\b\s*(.*)", ln)
        if m:
            kw, arg = m.group(1), m.group(2).strip()
            if kw in ("ifdef", "ifndef", "if"):
                mentioned = set(IDENT_RE.findall(arg)) & undefined
                if mentioned:
                    if kw == "if" or kw == "ifndef":
                        fail("%s: #%s %s: only #ifdef of an undefined macro is understood" %
                             (it.where(), kw, arg))
                    stack.append(["ours", False])
                    continue
                stack.append(["theirs", True])
            elif kw == "elif":
                if stack and stack[-1][0] == "ours":
                    fail("%s: #elif after #ifdef of an undefined macro" % it.where())
            elif kw == "else":
                if stack and stack[-1][0] == "ours":
                    stack[-1][1] = True
                    continue
            elif kw == "endif":
                top = stack.pop()
                if top[0] == "ours":
                    continue
        if all(s[1] for s in stack if s[0] == "ours"):
            out.append(ln)
    if stack:
        fail("%s: unbalanced conditionals" % it.where())
    return "\n".join(out)


def prototype_text(program, it, rename, subst, undefined, entries, static):
    text = render_tokens(it, rename, subst, undefined)
    brace = text.index("{")
    # Drop the body: the signature is everything before the body's brace.
    sig = text[:brace].rstrip()
    sig = re.sub(r"^(static\s+|inline\s+)+", "", sig)
    for attr in ("BSON_INLINE",):
        sig = re.sub(r"\b%s\s+" % attr, "", sig)
    return ("static " if static else "") + sig


def run_clang_format(binary, style, path, text):
    args = [binary, "--assume-filename=" + path]
    if style:
        args.append("--style=file:" + style)
    r = subprocess.run(args, input=text.encode(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if r.returncode != 0:
        fail("clang-format failed on %s: %s" % (path, r.stderr.decode(errors="replace")))
    return r.stdout.decode()


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("target")
    ap.add_argument("--stage", type=int)
    ap.add_argument("--out")
    ap.add_argument("--clang-format")
    ap.add_argument("--style")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--root", default=TOP, help="read src/ and include/ from this checkout (default: this one)")
    ap.add_argument("--count", action="store_true", help="print how many commits the series has")
    ap.add_argument("--paths", action="store_true", help="print every path any stage generates")
    ap.add_argument("--subject", type=int, help="print the subject of commit N")
    ap.add_argument("--clang-format-pin", action="store_true",
                    help="print the clang-format version the target is formatted with (master's 20.1.8 unless named)")
    args = ap.parse_args(argv)
    try:
        manifest = load_manifest(args.target)
        if args.count:
            print(len(manifest["commits"]))
            return 0
        if args.paths:
            for name, spec in manifest["units"].items():
                for path in unit_paths(name, spec):
                    print(path)
            return 0
        if args.clang_format_pin:
            print(manifest["target"].get("clang_format", "20.1.8"))
            return 0
        if args.subject:
            print(manifest["commits"][args.subject - 1]["subject"])
            return 0
        if args.list:
            for k, c in enumerate(manifest["commits"], 1):
                print("%d %s %s" % (k, c["subject"], json.dumps(stage_groups(manifest, k), sort_keys=True)))
            return 0
        if not args.stage or not args.out:
            ap.error("--stage and --out are needed")
        outputs = generate(manifest, args.stage, args.clang_format, args.style, args.root)
        for path in sorted(outputs):
            dest = os.path.join(args.out, path)
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            with open(dest, "w", encoding="utf-8", newline="\n") as f:
                f.write(outputs[path])
            print(path)
        return 0
    except GenError as e:
        print("generate.py: error: %s" % e, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
