#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The source layout's rules, checked: every folder of src/ with code has a README.md whose
'May include:' line lists the folders its files may include; every quoted include of
src/ and bpf/ stays in its folder or goes to one listed there; and no two modules (a .c
with its .h) include each other, directly or around a longer circle.
Usage: layers.py [REPO_ROOT]. Exit 0 when all hold, 1 with one line per violation."""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def module(path):
    """bpf/capture.bpf.h and a .c of the same stem are one module."""
    return re.sub(r"\.(c|h)$", "", path)


def allowed_includes(root, folders):
    """{folder: set of folders it may include}, and the problems with the READMEs."""
    allowed, bad = {}, []
    for d in folders:
        readme = os.path.join(root, "src", d, "README.md")
        if not os.path.exists(readme):
            bad.append("src/%s: no README.md saying what it owns and may include" % d)
            continue
        with open(readme, encoding="utf-8") as f:
            m = re.search(r"^May include:\s*(.*)$", f.read(), re.M)
        if not m:
            bad.append("%s: no 'May include:' line" % readme)
            continue
        words = [w.strip() for w in m.group(1).split(",")]
        allowed[d] = set() if words == ["nothing"] else set(words)
        for w in allowed[d] - set(folders):
            bad.append("%s: may include '%s', which is not a folder with code" % (readme, w))
    return allowed, bad


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
    if not os.path.isdir(os.path.join(root, "src")):
        print("layers: %s has no src/ folder" % root)
        return 2
    files, folders = [], set()
    for top in ("src", "bpf"):
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for n in names:
                if n.endswith((".c", ".h")):
                    rel = os.path.relpath(os.path.join(dirpath, n), root)
                    files.append(rel)
                    if top == "src":
                        folders.add(os.path.relpath(dirpath, os.path.join(root, "src")))
    if "." in folders:
        print("src/: files outside a subsystem folder: %s"
              % [f for f in files if os.path.dirname(f) == "src"])
        return 1
    allowed, bad = allowed_includes(root, sorted(folders))
    edges = {}
    for f in sorted(files):
        with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
            incs = INCLUDE.findall(fh.read())
        me = os.path.dirname(f)
        for inc in incs:
            if f.startswith("src/"):
                target = os.path.join("src", inc)
                if not os.path.exists(os.path.join(root, target)):
                    if "/" in inc and not inc.startswith("mlprof/"):
                        bad.append("%s: includes \"%s\", which is not in src/" % (f, inc))
                    continue  # generated (skeletons, protobuf-c) or include/mlprof
                folder = os.path.dirname(inc)
                mine = me[len("src/"):]
                if not folder:
                    bad.append("%s: includes \"%s\" without its folder" % (f, inc))
                elif folder != mine and folder not in allowed.get(mine, set()):
                    bad.append("%s: includes \"%s\": %s may not include %s (src/%s/README.md)"
                               % (f, inc, mine, folder, mine))
            else:
                target = os.path.join(me, inc)
                if not os.path.exists(os.path.join(root, target)):
                    continue  # vmlinux.h, generated
            if module(target) != module(f):
                edges.setdefault(module(f), set()).add(module(target))
    # circles: strongly connected components of the module graph (Tarjan)
    index, low, stack, on, comps = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    for c in comps:
        bad.append("include circle between modules: %s" % " <-> ".join(c))
    for b in bad:
        print(b)
    print("layers: %d files in %d folders, %d module edges, %d problems"
          % (len(files), len(folders), sum(len(e) for e in edges.values()), len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
