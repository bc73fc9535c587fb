#!/usr/bin/env python3
"""Structure check: no source file of the simulator over 900 lines, no function over 150.

Usage: scripts/structure-check.py [--report] [--root DIR]
       scripts/structure-check.py --self-test

Reports, one line each:
  - every .rs file under crates/numabal-sim/src longer than 900 lines, as
    `path: file of N lines (over 900)`;
  - every Rust function under crates/*/src longer than 150 lines, as
    `path:line fn name: N lines`, counted from the line of its `fn` to the line of its
    closing brace.
Left out: items under `#[cfg(test)]` (test modules), and functions that are data tables,
marked by the comment `// structure-check: table` on the line before the `fn` (attribute
and comment lines may sit between them). Use the marker only for true tables.

Braces are matched on the code alone: strings (plain, byte, raw `r#"..."#`, C), character
literals and comments (line, nested block) are skipped; lifetimes are told apart from
character literals.

Exit status: 0 when nothing is over its limit (or with --report, which prints the offenders
and exits 0), 1 when something is, 2 on bad arguments.

scripts/test.sh runs it (and its self-test).
"""

import os
import re
import sys

FILE_LIMIT = 900
FILE_LIMIT_DIR = os.path.join("crates", "numabal-sim", "src")
FN_LIMIT = 150
TABLE_MARKER = "// structure-check: table"

IDENT = re.compile(r"[A-Za-z0-9_]")
FN_NAME = re.compile(r"\bfn\s+(r#)?([A-Za-z_][A-Za-z0-9_]*)")
CFG_TEST = re.compile(r"#\s*\[\s*cfg\s*\(\s*test\s*\)\s*\]")


def mask(src):
    """The source with every comment, string and character literal replaced by spaces
    (newlines kept), so that what is left is code: braces, keywords, names."""
    out = list(src)
    n = len(src)
    i = 0

    def blank(a, b):
        for k in range(a, min(b, n)):
            if out[k] != "\n":
                out[k] = " "

    def ident_before(k):
        return k > 0 and IDENT.match(src[k - 1]) is not None

    while i < n:
        c = src[i]
        nxt = src[i + 1] if i + 1 < n else ""
        if c == "/" and nxt == "/":
            j = src.find("\n", i)
            j = n if j < 0 else j
            blank(i, j)
            i = j
        elif c == "/" and nxt == "*":
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif src.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            blank(i, j)
            i = j
        elif c in "rbc" and not ident_before(i):
            # Raw and prefixed strings: r"..", r#".."#, b"..", br#".."#, c"..", cr"..", b'x'.
            m = re.compile(r'(br|cr|r|b|c)(#*)"').match(src, i)
            if m and (m.group(2) or "r" in m.group(1)):
                end = src.find('"' + m.group(2), m.end())
                j = n if end < 0 else end + 1 + len(m.group(2))
                blank(i, j)
                i = j
            elif m:
                j = skip_string(src, m.end())
                blank(i, j)
                i = j
            elif c == "b" and nxt == "'":
                j = skip_char(src, i + 1)
                blank(i, j)
                i = j
            else:
                i += 1
        elif c == '"':
            j = skip_string(src, i + 1)
            blank(i, j)
            i = j
        elif c == "'":
            j = skip_char(src, i)
            blank(i, j)
            i = j
        else:
            i += 1
    return "".join(out)


def skip_string(src, i):
    """Index after the closing quote of a string whose body starts at i."""
    n = len(src)
    while i < n:
        if src[i] == "\\":
            i += 2
        elif src[i] == '"':
            return i + 1
        else:
            i += 1
    return n


def skip_char(src, i):
    """At a quote: the index after a character literal, or after the quote of a lifetime
    or loop label (`'a`, `'static`, `'outer:`)."""
    n = len(src)
    if i + 1 < n and src[i + 1] == "\\":
        j = i + 2
        if j < n and src[j] == "u" and j + 1 < n and src[j + 1] == "{":
            close = src.find("}", j)
            j = n if close < 0 else close + 1
        else:
            j += 1
            while j < n and src[j] != "'" and src[j] != "\n":
                j += 1
        return j + 1 if j < n and src[j] == "'" else j
    if i + 2 < n and src[i + 2] == "'" and src[i + 1] != "\n":
        return i + 3
    return i + 1


def matching_brace(code, i):
    """Index of the `}` closing the `{` at i (len(code) if unbalanced)."""
    depth = 0
    for j in range(i, len(code)):
        if code[j] == "{":
            depth += 1
        elif code[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(code)


def body_start(code, i):
    """From i (after an item's name), the index of the `{` opening its body, or None when
    a `;` ends it first (a declaration). Braces inside () and [] (patterns, array types)
    do not count."""
    depth = 0
    for j in range(i, len(code)):
        ch = code[j]
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif depth == 0 and ch == "{":
            return j
        elif depth == 0 and ch == ";":
            return None
    return None


def line_of(code, i, starts):
    """1-based line of index i, given the indices where lines start."""
    lo, hi = 0, len(starts) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if starts[mid] <= i:
            lo = mid
        else:
            hi = mid - 1
    return lo + 1


def test_ranges(code):
    """(first, last) index ranges of the items under #[cfg(test)]."""
    ranges = []
    for m in CFG_TEST.finditer(code):
        b = body_start(code, m.end())
        if b is None:
            semi = code.find(";", m.end())
            ranges.append((m.start(), len(code) if semi < 0 else semi))
        else:
            ranges.append((m.start(), matching_brace(code, b)))
    return ranges


def marked_table(lines, fn_line):
    """Whether the marker comment sits above the fn line, across attribute and comment
    lines only."""
    k = fn_line - 2
    while k >= 0:
        t = lines[k].strip()
        if t == TABLE_MARKER:
            return True
        if t.startswith("#[") or t.startswith("#!") or t.startswith("//") or t == "]":
            k -= 1
            continue
        return False
    return False


def long_functions(src, limit=FN_LIMIT):
    """(line, name, lines) of every function over `limit` lines outside #[cfg(test)]
    items and not marked as a table."""
    code = mask(src)
    starts = [0] + [k + 1 for k, ch in enumerate(code) if ch == "\n"]
    lines = src.split("\n")
    skip = test_ranges(code)
    found = []
    for m in FN_NAME.finditer(code):
        if any(a <= m.start() <= b for a, b in skip):
            continue
        b = body_start(code, m.end())
        if b is None:
            continue
        first = line_of(code, m.start(), starts)
        last = line_of(code, matching_brace(code, b), starts)
        count = last - first + 1
        if count > limit and not marked_table(lines, first):
            found.append((first, m.group(2), count))
    return found


def rust_files(top):
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames.sort()
        for f in sorted(filenames):
            if f.endswith(".rs"):
                yield os.path.join(dirpath, f)


def file_lines(text):
    return text.count("\n") + (0 if text.endswith("\n") or not text else 1)


def check(root):
    """Offender lines, in path order."""
    out = []
    crates = os.path.join(root, "crates")
    for crate in sorted(os.listdir(crates)):
        src_dir = os.path.join(crates, crate, "src")
        if not os.path.isdir(src_dir):
            continue
        for path in rust_files(src_dir):
            rel = os.path.relpath(path, root)
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
            n = file_lines(text)
            if rel.startswith(FILE_LIMIT_DIR + os.sep) and n > FILE_LIMIT:
                out.append(f"{rel}: file of {n} lines (over {FILE_LIMIT})")
            for line, name, count in long_functions(text):
                out.append(f"{rel}:{line} fn {name}: {count} lines")
    return out


def self_test():
    """The lexer and the counting on tricky text; exits 1 on the first failure."""
    body = "    x();\n" * 151
    cases = [
        # (source, expected [(line, name, lines)])
        ("fn a() {\n" + body + "}\n", [(1, "a", 153)]),
        ("fn a() {\n" + body[: 9 * 148] + "}\n", []),
        # Braces in strings, raw strings, chars and comments do not count.
        ('fn a() {\n    let s = "}}}";\n    let r = r#"}"#;\n    let c = \'}\';\n'
         "    // }\n    /* } /* } */ } */\n" + body + "}\n", [(1, "a", 158)]),
        # A lifetime is not a character literal.
        ("fn a<'x>(v: &'x str) -> &'x str {\n" + body + "    v\n}\n", [(1, "a", 154)]),
        # Struct patterns and array types in the signature; declarations without a body.
        ("trait T { fn d(&self); }\nfn a(P { x }: P, b: [u8; 4]) {\n" + body + "}\n",
         [(2, "a", 153)]),
        # Tables are left out when marked.
        ("// structure-check: table\n#[rustfmt::skip]\nfn a() {\n" + body + "}\n", []),
        # #[cfg(test)] modules are left out.
        ("#[cfg(test)]\nmod tests {\n    fn a() {\n" + body + "    }\n}\n", []),
        # An escaped quote in a char, a byte string, a raw identifier.
        ("fn r#a() {\n    let q = '\\'';\n    let b = b\"}\";\n" + body + "}\n",
         [(1, "a", 155)]),
    ]
    for k, (src, want) in enumerate(cases):
        got = long_functions(src)
        if got != want:
            print(f"self-test case {k}: want {want}, got {got}", file=sys.stderr)
            sys.exit(1)
    print(f"structure-check: self-test passed ({len(cases)} cases)")


def main(argv):
    report = False
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    args = list(argv)
    while args:
        a = args.pop(0)
        if a == "--report":
            report = True
        elif a == "--root" and args:
            root = args.pop(0)
        elif a == "--self-test":
            self_test()
            return 0
        elif a in ("-h", "--help"):
            print(__doc__.strip())
            return 0
        else:
            print(f"structure-check: unknown argument {a} (try --help)", file=sys.stderr)
            return 2
    if not os.path.isdir(os.path.join(root, "crates")):
        print(f"structure-check: no crates/ under {root}", file=sys.stderr)
        return 2
    offenders = check(root)
    for o in offenders:
        print(o)
    if offenders:
        print(
            f"structure-check: {len(offenders)} over the limits "
            f"(files of numabal-sim: {FILE_LIMIT} lines, functions: {FN_LIMIT})",
            file=sys.stderr,
        )
        return 0 if report else 1
    print("structure-check: ok", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
