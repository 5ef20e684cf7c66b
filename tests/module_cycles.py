#!/usr/bin/env python3
"""Find import cycles between the modules of the crate's src/.

Every .rs file under src/ is a module of the library: src/lib.rs is
`crate`, src/foo.rs and src/foo/mod.rs are `crate::foo`, src/foo/bar.rs is
`crate::foo::bar`. src/main.rs (and src/bin/*.rs), with the files they
declare with `mod x;`, form binary crates that reach the library by its
name (`rgrade::`).

A module imports another when one of its files names a path into it: in
a `use` (grouped ones too: `use crate::{a, b::c}`) or inline
(`crate::x::y(...)`), through `crate::`, `self::`, `super::`, the library's
name or a child module's name. A path counts for the longest module it
reaches. A cycle is a chain of imports between distinct modules that comes
back to where it started (so a module importing its parent or a child is
a cycle only if the other imports it back). Imports made only in
`#[cfg(test)]` code count too, and the cycles that need them are listed
apart.

The library's top-level modules (each folder of src/, and each single
file) are checked the same way: a folder imports another when one of its
modules imports one of the other's, and a cycle among folders is reported
though every file be free of cycles. A crate named with --binary-only
(clap) may be named by the binary's modules only: a library module that
names it is reported.

Usage:
    python3 tests/module_cycles.py [--root DIR] [--binary-only CRATE]...
                                                  the crate in DIR (default:
                                                  the one holding this file)
    python3 tests/module_cycles.py --self-test    check this script on a
                                                  small made-up crate

Exit status 1, with every cycle and where each import is written, if there
is a cycle (or a binary-only crate named by the library); 0 and "no import
cycles among N modules nor among the folders of src/" otherwise.
Python 3 standard library only.
"""

import argparse
import bisect
import io
import re
import sys
import tempfile
from pathlib import Path

# How many cycles to list at most: a tangle of modules can have very many.
MAX_CYCLES = 200

# ---------------------------------------------------------------------------
# Reading Rust source: comments and literals out, then tokens.
# ---------------------------------------------------------------------------

RAW_STRING = re.compile(r'[bc]?r(#*)"')
TOKEN = re.compile(r"(r#[A-Za-z_]\w*|[A-Za-z_]\w*)|(\d[\w.]*)|(::|\S)")


def blank(text):
    """`text` with everything but its line ends turned into spaces."""
    return "".join("\n" if c == "\n" else " " for c in text)


def strip_comments_and_literals(src):
    """The source with comments, strings and char literals blanked out, so
    that a path in a doc comment or a string is not taken for an import.
    Offsets and line numbers are kept."""
    out = []
    i, n = 0, len(src)

    def after_ident(at):
        return at > 0 and (src[at - 1].isalnum() or src[at - 1] == "_")

    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
        elif src.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif src.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
        elif c in "bcr" and not after_ident(i) and RAW_STRING.match(src, i):
            m = RAW_STRING.match(src, i)
            end = src.find('"' + m.group(1), m.end())
            j = n if end < 0 else end + 1 + len(m.group(1))
        elif c == '"' or (c in "bc" and src.startswith('"', i + 1) and not after_ident(i)):
            j = i + (1 if c == '"' else 2)
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            j += 1
        elif c == "'" or (c == "b" and src.startswith("'", i + 1) and not after_ident(i)):
            k = i + (1 if c == "'" else 2)
            if k < n and src[k] == "\\":
                end = src.find("'", k + 2)
                j = n if end < 0 else end + 1
            elif k + 1 < n and src[k + 1] == "'":
                j = k + 2
            else:  # a lifetime or a label: keep it
                out.append(c)
                i += 1
                continue
        else:
            out.append(c)
            i += 1
            continue
        out.append(blank(src[i:j]))
        i = j
    return "".join(out)


def tokens(src):
    """(kind, text, line) of every token: `id` for identifiers and
    keywords, `num` for numbers, `p` for punctuation (`::` is one)."""
    text = strip_comments_and_literals(src)
    line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
    out = []
    for m in TOKEN.finditer(text):
        line = bisect.bisect_right(line_starts, m.start())
        if m.group(1):
            out.append(("id", m.group(1).removeprefix("r#"), line))
        elif m.group(2):
            out.append(("num", m.group(2), line))
        else:
            out.append(("p", m.group(3), line))
    return out


# ---------------------------------------------------------------------------
# The crate's modules.
# ---------------------------------------------------------------------------


class Module:
    """One file: its crate (`lib` or a binary's name), its path within that
    crate, and its file."""

    def __init__(self, crate, path, file):
        self.crate, self.path, self.file = crate, path, file

    @property
    def key(self):
        return (self.crate, self.path)


def module_name(key, lib_crate="lib"):
    crate, path = key
    root = "crate" if crate == lib_crate else crate
    return "::".join((root,) + path)


def library_name(root):
    """The name binaries use for the library: [lib] name, else the package
    name with `-` as `_`."""
    manifest = root / "Cargo.toml"
    if not manifest.exists():
        return root.name.replace("-", "_")
    section, names = None, {}
    for line in manifest.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line.startswith("["):
            section = line.strip("[] ")
            continue
        m = re.match(r'name\s*=\s*"([^"]+)"', line)
        if m and section in ("package", "lib") and section not in names:
            names[section] = m.group(1)
    return names.get("lib", names.get("package", root.name)).replace("-", "_")


def declared_modules(toks):
    """`mod x;` declarations of a file: (name, line, under #[cfg(test)])."""
    out = []
    walker = Walker(toks)
    for i, (kind, text, line) in enumerate(toks):
        walker.step(i)
        if (text == "mod" and i + 2 < len(toks) and toks[i + 1][0] == "id"
                and toks[i + 2][1] == ";"):
            out.append((toks[i + 1][1], line, walker.in_test))
    return out


def child_file(parent_file, is_root_like, name):
    """The file of `mod name;` declared in `parent_file`, if it exists."""
    base = parent_file.parent if is_root_like else parent_file.with_suffix("")
    for candidate in (base / f"{name}.rs", base / name / "mod.rs"):
        if candidate.exists():
            return candidate
    return None


def find_modules(src):
    """Every module of the crate in `src`: the library's by layout, each
    binary's by following its `mod x;` declarations."""
    modules, in_binary = [], set()
    roots = []
    if (src / "main.rs").exists():
        roots.append(("main", src / "main.rs"))
    if (src / "bin").is_dir():
        for f in sorted((src / "bin").iterdir()):
            if f.suffix == ".rs":
                roots.append((f"bin/{f.stem}", f))
            elif (f / "main.rs").exists():
                roots.append((f"bin/{f.name}", f / "main.rs"))
    for crate, root_file in roots:
        todo = [(root_file, (), True)]
        while todo:
            file, path, root_like = todo.pop()
            if file in in_binary:
                continue
            in_binary.add(file)
            modules.append(Module(crate, path, file))
            toks = tokens(file.read_text(encoding="utf-8"))
            for name, _, _ in declared_modules(toks):
                child = child_file(file, root_like, name)
                if child is not None:
                    todo.append((child, path + (name,), child.name == "mod.rs"))
    for file in sorted(src.rglob("*.rs")):
        rel = file.relative_to(src)
        if file in in_binary or rel.parts[0] == "bin":
            continue
        parts = list(rel.with_suffix("").parts)
        if parts == ["lib"]:
            parts = []
        elif parts[-1] == "mod":
            parts.pop()
        modules.append(Module("lib", tuple(parts), file))
    return modules


# ---------------------------------------------------------------------------
# Imports.
# ---------------------------------------------------------------------------


class Walker:
    """Follows braces through a file's tokens: which inline modules
    (`mod tests { ... }`) and which `#[cfg(test)]` items each token is in."""

    def __init__(self, toks):
        self.toks = toks
        self.depth = 0
        self.nesting = 0  # ( and [
        self.inline = []  # (name, depth inside it)
        self.test_until = []  # depths at which a #[cfg(test)] item closes
        self.pending_test = False
        self.pending_mod = None

    @property
    def in_test(self):
        return bool(self.test_until) or self.pending_test

    def step(self, i):
        toks = self.toks
        text = toks[i][1]
        if text == "#" and [t[1] for t in toks[i + 1:i + 7]] == ["[", "cfg", "(", "test", ")", "]"]:
            self.pending_test = True
        if text == "mod" and i + 2 < len(toks) and toks[i + 2][1] == "{":
            self.pending_mod = toks[i + 1][1]
        if text in "([" and len(text) == 1:
            self.nesting += 1
        elif text in ")]" and len(text) == 1:
            self.nesting -= 1
        elif text == "{":
            if self.pending_test and self.nesting == 0:
                self.test_until.append(self.depth)
                self.pending_test = False
            self.depth += 1
            if self.pending_mod is not None:
                self.inline.append((self.pending_mod, self.depth))
                self.pending_mod = None
        elif text == "}":
            if self.inline and self.inline[-1][1] == self.depth:
                self.inline.pop()
            self.depth -= 1
            if self.test_until and self.test_until[-1] == self.depth:
                self.test_until.pop()
        elif text == ";" and self.nesting == 0 and self.pending_test:
            self.pending_test = False


def parse_use_tree(toks, i, prefix):
    """The paths of the use tree starting at token i: (paths, next index)."""
    segments = list(prefix)
    paths = []
    while i < len(toks):
        kind, text, _ = toks[i]
        if text == "::":
            i += 1
        elif kind == "id" and text != "as":
            segments.append(text)
            i += 1
            if i < len(toks) and toks[i][1] == "::":
                continue
            paths.append(segments)
            break
        elif text == "{":
            i += 1
            while i < len(toks) and toks[i][1] != "}":
                if toks[i][1] == ",":
                    i += 1
                    continue
                sub, i = parse_use_tree(toks, i, segments)
                paths.extend(sub)
            i += 1
            break
        elif text == "*":
            paths.append(segments)
            i += 1
            break
        else:
            break
    if i + 1 < len(toks) and toks[i][1] == "as":
        i += 2
    return paths, i


class Imports:
    """The imports found in every module, with where each is written."""

    def __init__(self, modules, lib_name):
        self.modules = modules
        self.lib_name = lib_name
        self.known = {m.key for m in modules}
        self.children = {}
        for m in modules:
            if m.path:
                self.children.setdefault((m.crate, m.path[:-1]), set()).add(m.path[-1])
        # (from, to) -> [(file, line, in test code)]
        self.edges = {}

    def resolve(self, module, inline, segments):
        """The module a path reaches from `module` (inside the inline
        modules `inline`), or None when it leaves the crate."""
        crate, first = module.crate, segments[0]
        if first == "crate":
            base, rest = (), segments[1:]
        elif first == self.lib_name and module.crate != "lib":
            crate, base, rest = "lib", (), segments[1:]
        elif first in ("self", "super"):
            base, rest = module.path + tuple(inline), list(segments)
            while rest and rest[0] in ("self", "super"):
                if rest.pop(0) == "super":
                    if not base:
                        return None
                    base = base[:-1]
        elif not inline and first in self.children.get(module.key, ()):
            base, rest = module.path, segments
        else:
            return None
        full = base + tuple(s for s in rest if s != "self")
        for k in range(len(full), -1, -1):
            if (crate, full[:k]) in self.known:
                return (crate, full[:k])
        return None

    def add(self, module, inline, segments, line, in_test):
        target = self.resolve(module, inline, segments)
        if target is None or target == module.key:
            return
        places = self.edges.setdefault((module.key, target), [])
        if (module.file, line, in_test) not in places:
            places.append((module.file, line, in_test))

    def read(self, module, test_module):
        toks = tokens(module.file.read_text(encoding="utf-8"))
        walker = Walker(toks)
        i = 0
        while i < len(toks):
            walker.step(i)
            kind, text, line = toks[i]
            in_test = walker.in_test or test_module
            prev = toks[i - 1][1] if i else ""
            if kind == "id" and text == "use" and prev not in ("::", "."):
                paths, end = parse_use_tree(toks, i + 1, [])
                for path in paths:
                    if path:
                        self.add(module, [n for n, _ in walker.inline], path, line, in_test)
                # The tree's tokens are walked too, for the braces.
                for j in range(i + 1, end):
                    walker.step(j)
                i = end
                continue
            starts_path = (
                kind == "id"
                and i + 2 < len(toks)
                and toks[i + 1][1] == "::"
                and toks[i + 2][0] == "id"
                and prev not in ("::", "$", ".", "'")
                and not (prev == "in" and i >= 3 and toks[i - 3][1] == "pub")
            )
            if starts_path:
                segments, j = [text], i + 1
                while j + 1 < len(toks) and toks[j][1] == "::" and toks[j + 1][0] == "id":
                    segments.append(toks[j + 1][1])
                    j += 2
                self.add(module, [n for n, _ in walker.inline], segments, line, in_test)
            i += 1


def test_only_modules(modules):
    """Modules declared under #[cfg(test)] (`#[cfg(test)] mod tests;`), and
    everything below them."""
    by_key = {m.key: m for m in modules}
    marked = set()
    for m in modules:
        toks = tokens(m.file.read_text(encoding="utf-8"))
        for name, _, in_test in declared_modules(toks):
            if in_test and (m.crate, m.path + (name,)) in by_key:
                marked.add((m.crate, m.path + (name,)))
    return {m.key for m in modules
            if any(m.crate == c and m.path[:len(p)] == p for c, p in marked)}


# ---------------------------------------------------------------------------
# Cycles.
# ---------------------------------------------------------------------------


def strongly_connected(nodes, succ):
    """Tarjan's strongly connected components, each as a sorted list."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(succ.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            out.append(sorted(component))

    sys.setrecursionlimit(max(1000, 4 * len(nodes) + 100))
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def elementary_cycles(nodes, succ, limit=MAX_CYCLES):
    """Every cycle through distinct nodes, each once, starting at its
    smallest node; at most `limit` of them (and whether any were left)."""
    cycles = []
    for component in strongly_connected(nodes, succ):
        if len(component) < 2:
            continue
        members = set(component)
        for start in component:
            allowed = {v for v in members if v >= start}
            path = [start]

            def extend(v):
                for w in sorted(succ.get(v, ())):
                    if w not in allowed:
                        continue
                    if w == start:
                        cycles.append(list(path))
                        if len(cycles) > limit:
                            return True
                    elif w not in path:
                        path.append(w)
                        if extend(w):
                            return True
                        path.pop()
                return False

            if extend(start):
                return cycles[:limit], True
    return cycles, False


class Analysis:
    """What was found in one crate."""

    def __init__(self, count, plain, test_only, edges, cut, folder_cycles, folder_edges,
                 binary_only):
        self.count = count  # modules
        self.plain = plain  # module cycles outside test code
        self.test_only = test_only  # module cycles that need test code
        self.edges = edges  # (from, to) -> [(file, line, in test)]
        self.cut = cut  # whether the list of module cycles was cut short
        self.folder_cycles = folder_cycles  # cycles among the library's top-level modules
        self.folder_edges = folder_edges  # (from, to) top-level -> [(module, module)]
        self.binary_only = binary_only  # [(crate name, file, line)] named outside the binary

    def clean(self):
        return not (self.plain or self.test_only or self.folder_cycles or self.binary_only)


def top_level(key):
    """The library's top-level module holding module `key` (a folder of
    src/, or one of its single files); None for the library root and the
    binaries."""
    crate, path = key
    return ("lib", path[:1]) if crate == "lib" and path else None


def folder_imports(edges):
    """The imports between the library's top-level modules: (from, to) ->
    the module imports behind it."""
    folders = {}
    for a, b in edges:
        fa, fb = top_level(a), top_level(b)
        if fa and fb and fa != fb:
            folders.setdefault((fa, fb), []).append((a, b))
    return folders


def crates_named(module, names):
    """Where the module's file names one of the crates `names` (a path
    starting with it, or `extern crate`): [(name, line)]."""
    toks = tokens(module.file.read_text(encoding="utf-8"))
    found = []
    for i, (kind, text, line) in enumerate(toks):
        if kind != "id" or text not in names:
            continue
        prev = toks[i - 1][1] if i else ""
        follows = toks[i + 1][1] if i + 1 < len(toks) else ""
        if prev not in ("::", ".") and (follows == "::" or prev in ("use", "crate")):
            found.append((text, line))
    return found


def analyse(root, binary_only=()):
    """The modules of the crate at `root`, their import cycles and those of
    its top-level modules, and where a crate of `binary_only` is named
    outside the binary."""
    src = root / "src"
    modules = find_modules(src)
    imports = Imports(modules, library_name(root))
    test_modules = test_only_modules(modules)
    for m in modules:
        imports.read(m, m.key in test_modules)
    succ = {}
    for a, b in imports.edges:
        succ.setdefault(a, set()).add(b)
    cycles, cut = elementary_cycles({m.key for m in modules}, succ)
    plain, test_only = [], []
    for cycle in cycles:
        pairs = list(zip(cycle, cycle[1:] + cycle[:1]))
        needs_test = any(all(t for _, _, t in imports.edges[p]) for p in pairs)
        (test_only if needs_test else plain).append(cycle)
    folder_edges = folder_imports(imports.edges)
    folder_succ = {}
    for a, b in folder_edges:
        folder_succ.setdefault(a, set()).add(b)
    folders = {top_level(m.key) for m in modules} - {None}
    folder_cycles, _ = elementary_cycles(folders, folder_succ)
    named = [(name, m.file, line)
             for m in modules if m.crate == "lib"
             for name, line in crates_named(m, set(binary_only))]
    return Analysis(len(modules), plain, test_only, imports.edges, cut, folder_cycles,
                    folder_edges, named)


def report(root, out=sys.stdout, binary_only=()):
    """Print the cycles of the crate at `root`, and where a crate of
    `binary_only` is named by the library; the exit status."""
    found = analyse(root, binary_only)
    if found.clean():
        print(f"no import cycles among {found.count} modules nor among the folders of src/",
              file=out)
        return 0
    edges = found.edges

    def where(a, b):
        places = edges[(a, b)]
        file, line, _ = places[0]
        more = f" (+{len(places) - 1} more)" if len(places) > 1 else ""
        return f"{file.relative_to(root)}:{line}{more}"

    def show(cycle):
        names = [module_name(k) for k in cycle + cycle[:1]]
        print("  " + " -> ".join(names), file=out)
        for a, b in zip(cycle, cycle[1:] + cycle[:1]):
            print(f"    {module_name(a)} uses {module_name(b)} at {where(a, b)}", file=out)

    total = len(found.plain) + len(found.test_only)
    if total:
        print(f"{total} import cycle{'s' if total != 1 else ''} among {found.count} modules",
              file=out)
    for cycle in found.plain:
        show(cycle)
    if found.test_only:
        print("only through #[cfg(test)] code:", file=out)
        for cycle in found.test_only:
            show(cycle)
    if found.cut:
        print(f"(listing stopped at {MAX_CYCLES} cycles)", file=out)
    if found.folder_cycles:
        n = len(found.folder_cycles)
        print(f"{n} import cycle{'s' if n != 1 else ''} among the folders of src/", file=out)
        for cycle in found.folder_cycles:
            names = [module_name(k) for k in cycle + cycle[:1]]
            print("  " + " -> ".join(names), file=out)
            for fa, fb in zip(cycle, cycle[1:] + cycle[:1]):
                a, b = sorted(found.folder_edges[(fa, fb)])[0]
                print(f"    {module_name(a)} uses {module_name(b)} at {where(a, b)}", file=out)
    for name, file, line in found.binary_only:
        print(f"{file.relative_to(root)}:{line}: the library names {name}, which only the binary "
              f"may use", file=out)
    return 1


# ---------------------------------------------------------------------------
# Self-test.
# ---------------------------------------------------------------------------

FAKE_CRATE = {
    "Cargo.toml": '[package]\nname = "fake-crate"\n',
    "src/lib.rs": "pub mod a;\npub mod b;\npub mod c;\npub mod d;\npub mod e;\npub mod quiet;\n",
    # a -> b -> c -> a, through a plain use, a grouped use and an inline path.
    "src/a.rs": (
        "use crate::b::Thing;\n"
        "// use crate::e::h;  (a comment is no import)\n"
        'pub const NOTE: &str = "crate::e::h()";\n'
        "pub fn g<'a>(x: &'a str) -> char { let _ = x; '}' }\n"
    ),
    "src/b.rs": "use crate::{c::X, d};\npub struct Thing;\npub fn f() { let _ = d::inner::Y; }\n",
    "src/c.rs": "pub struct X;\npub fn f() {\n    crate::a::g(\"x\");\n}\n",
    # d <-> d::inner: a parent and its child that import each other.
    "src/d/mod.rs": "pub mod inner;\nuse inner::Y;\npub struct Z;\npub fn f(_: Y) {}\n",
    "src/d/inner.rs": "pub struct Y;\nuse super::Z;\npub fn f(_: Z) {}\n",
    # e <-> quiet, but e's half is test code only.
    "src/e.rs": (
        "pub fn h() {}\n"
        "#[cfg(test)]\n"
        "mod tests {\n"
        "    use super::*;\n"
        "    use crate::quiet::Q;\n"
        "}\n"
    ),
    "src/quiet.rs": "pub struct Q;\npub fn f() { crate::e::h(); }\n",
    # The binary: main::cli <-> main::helpers, and the library by name.
    "src/main.rs": "mod cli;\nmod helpers;\nuse fake_crate::a::g;\nfn main() { cli::run(); let _ = g(\"\"); }\n",
    "src/cli.rs": "use crate::helpers::help;\npub fn run() { help(); }\n",
    "src/helpers.rs": "pub fn help() { let _ = crate::cli::run; fake_crate::c::f(); }\n",
}

CLEAN_CRATE = {
    "Cargo.toml": '[package]\nname = "clean"\n',
    "src/lib.rs": "pub mod a;\npub mod b;\n",
    "src/a.rs": "pub fn f() {}\n#[cfg(test)]\nmod tests {\n    use super::f;\n}\n",
    "src/b.rs": "use crate::a::f;\npub fn g() { f(); super::a::f(); }\n",
}


# Each file free of cycles, but folder a reaches b (a::x -> b::y) and b
# reaches a (b::z -> a::w); a::w names clap, which the library may not, and
# the binary may.
FOLDER_CRATE = {
    "Cargo.toml": '[package]\nname = "folders"\n',
    "src/lib.rs": "pub mod a;\npub mod b;\n",
    "src/a/mod.rs": "pub mod w;\npub mod x;\n",
    "src/a/w.rs": "use clap::Parser;\npub struct W;\n#[derive(clap::ValueEnum)]\npub enum E { One }\n",
    "src/a/x.rs": "use crate::b::y::Y;\npub fn f(_: Y) {}\n",
    "src/b/mod.rs": "pub mod y;\npub mod z;\n",
    "src/b/y.rs": "pub struct Y;\n// clap::Parser in a comment names nothing\n",
    "src/b/z.rs": "use crate::a::w::W;\npub fn g(_: W) {}\n",
    "src/main.rs": "use clap::Parser;\nfn main() {}\n",
}


def write_tree(root, files):
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def self_test():
    failures = []

    def check(what, got, want):
        if got != want:
            failures.append(f"{what}: got {got!r}, want {want!r}")

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "fake"
        write_tree(root, FAKE_CRATE)
        found = analyse(root)
        plain, test_only, edges = found.plain, found.test_only, found.edges
        name = lambda cycle: " -> ".join(module_name(k) for k in cycle)
        check("modules", found.count, 11)
        check("cycles", sorted(name(c) for c in plain), [
            "crate::a -> crate::b -> crate::c",
            "crate::d -> crate::d::inner",
            "main::cli -> main::helpers",
        ])
        check("test-only cycles", sorted(name(c) for c in test_only), ["crate::e -> crate::quiet"])
        check("comment and string ignored", (("lib", ("a",)), ("lib", ("e",))) in edges, False)
        check("binary reaches the library", (("main", ()), ("lib", ("a",))) in edges, True)
        check("grouped use", (("lib", ("b",)), ("lib", ("d",))) in edges, True)
        buffer = io.StringIO()
        check("exit status with cycles", report(root, buffer), 1)
        check("reported", "crate::c uses crate::a at src/c.rs:3" in buffer.getvalue(), True)

        clean = Path(tmp) / "clean"
        write_tree(clean, CLEAN_CRATE)
        buffer = io.StringIO()
        check("exit status without cycles", report(clean, buffer), 0)
        check("message", buffer.getvalue(),
              "no import cycles among 3 modules nor among the folders of src/\n")

        folders = Path(tmp) / "folders"
        write_tree(folders, FOLDER_CRATE)
        found = analyse(folders, binary_only=["clap"])
        check("no module cycle", found.plain + found.test_only, [])
        check("folder cycles", [name(c) for c in found.folder_cycles], ["crate::a -> crate::b"])
        check("binary-only crates named by the library",
              [(n, f.relative_to(folders).as_posix(), line) for n, f, line in found.binary_only],
              [("clap", "src/a/w.rs", 1), ("clap", "src/a/w.rs", 3)])
        buffer = io.StringIO()
        check("exit status with a folder cycle", report(folders, buffer, ["clap"]), 1)
        check("folder cycle reported",
              "crate::b::z uses crate::a::w at src/b/z.rs:1" in buffer.getvalue(), True)

    if failures:
        print("self-test failed:")
        for f in failures:
            print("  " + f)
        return 1
    print("self-test passed")
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent,
                        help="the crate's directory (holding Cargo.toml and src/)")
    parser.add_argument("--self-test", action="store_true",
                        help="check this script on a small made-up crate")
    parser.add_argument("--binary-only", action="append", default=[], metavar="CRATE",
                        help="a crate only the binary may name (repeatable)")
    args = parser.parse_args(argv)
    if args.self_test:
        return self_test()
    if not (args.root / "src").is_dir():
        print(f"{args.root}: no src/ directory", file=sys.stderr)
        return 2
    return report(args.root.resolve(), binary_only=args.binary_only)


if __name__ == "__main__":
    sys.exit(main())
