#!/usr/bin/env python3
"""Lines inside Rust function bodies under a folder (tests under `#[cfg(test)]`, and the files
of modules declared under it, left out):
how much work a crate or the binary holds, as opposed to declarations and help text.

    python3 scripts/fn-body-lines.py src          # the total
    python3 scripts/fn-body-lines.py src --files  # and each file's, largest last

A rough reader: it counts from a line that declares `fn name` to the brace that closes its
body, with strings and `//` comments taken out before braces are counted.
"""
import os
import re
import sys


def body_lines(path):
    total, depth, inside, start, level, opened = 0, 0, False, 0, 0, False
    in_tests = False
    for n, line in enumerate(open(path, encoding="utf-8")):
        if line.strip().startswith("#[cfg(test)]"):
            in_tests = True
        code = re.sub(r'"(\\.|[^"\\])*"', '""', re.sub(r"//.*", "", line))
        if not inside and not in_tests and re.search(r"\bfn\s+\w+", code):
            inside, start, level, opened = True, n, depth, False
        for ch in code:
            if ch == "{":
                depth += 1
                opened = opened or inside
            elif ch == "}":
                depth -= 1
                if inside and opened and depth == level:
                    total += n - start + 1
                    inside = False
        if inside and not opened and code.rstrip().endswith(";"):
            inside = False
    return total


def test_modules(path):
    """The files of the modules `path` declares under `#[cfg(test)]` (`mod tests;`)."""
    lines = open(path, encoding="utf-8").read().split("\n")
    folder = os.path.dirname(path)
    if os.path.basename(path) not in ("mod.rs", "main.rs", "lib.rs"):
        folder = os.path.join(folder, os.path.basename(path)[:-3])
    out = []
    for before, line in zip(lines, lines[1:]):
        m = re.match(r"\s*(pub\s+)?mod\s+(\w+)\s*;", line)
        if m and before.strip().startswith("#[cfg(test)]"):
            name = m.group(2)
            out += [os.path.join(folder, name + ".rs"), os.path.join(folder, name, "mod.rs")]
    return out


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "src"
    files = []
    for folder, _, names in os.walk(root):
        files += [os.path.join(folder, f) for f in names if f.endswith(".rs")]
    tests = {os.path.normpath(t) for f in files for t in test_modules(f)}
    files = [f for f in files if os.path.normpath(f) not in tests]
    counted = sorted((body_lines(p), p) for p in files)
    if "--files" in sys.argv:
        for lines, path in counted:
            print(f"{lines:6} {path}")
    print(f"{sum(c for c, _ in counted):6} function-body lines under {root}")


if __name__ == "__main__":
    main()
