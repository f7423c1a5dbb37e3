# SPDX-License-Identifier: Apache-2.0
"""mlprof record on a Rust program (tests/rust/rust_chains.rs, -O2, no frame pointers,
unwound through .eh_frame): demangled names, v0 ("_R...") and legacy ("_ZN...17h<hash>E"),
printed as rustc-demangle's alternate form does, and >= 95% full chains from the leaf to
_start. Exit 77 (skipped) when not root or when rustc was not there to build the program."""
import os
import unittest

from itutil import need_root, record, stacks_of, tmpdir

RUST_DIR = os.environ.get("RUST_DIR", "build/tests/rust")
LIBC_START = {"__libc_start_call_main", "__libc_start_main", "__libc_start_main_impl",
              "__libc_start_main_alias_2"}

CHAIN_V0 = ["rust_chains::outer::inner::spin_leaf",
            "<rust_chains::outer::Burner as rust_chains::outer::Work>::work",
            "rust_chains::outer::generic_step::<rust_chains::outer::Burner>",
            "rust_chains::run", "rust_chains::main"]
# legacy mangling has no generic arguments in the path
CHAIN_LEGACY = CHAIN_V0[:2] + ["rust_chains::outer::generic_step"] + CHAIN_V0[3:]


def full_chain(names, chain):
    """names leaf first: chain contiguous from the leaf, then Rust's start code, C main,
    libc's start code and _start, nothing truncated or unnamed."""
    if names[:len(chain)] != chain:
        return False
    rest = names[len(chain):]
    if any(n.startswith("[truncated") or "+0x" in n for n in rest):
        return False
    if "main" not in rest or rest[-1] != "_start":
        return False
    after_main = rest[rest.index("main") + 1:-1]
    return all(n in LIBC_START for n in after_main)


class RecordRust(unittest.TestCase):
    def setUp(self):
        need_root(self)
        self.dir = tmpdir()

    def check(self, exe, chain):
        path = os.path.join(RUST_DIR, exe)
        if not os.path.exists(path):
            self.skipTest("%s not built (no rustc at configure time)" % path)
        pb = os.path.join(self.dir, exe + ".pb.gz")
        _, js = record(["-F", "499", "-q", "-o", pb], [path, "4"])
        self.assertEqual(len(js), 1, "the program's JSON line")
        _, stacks = stacks_of(pb, exe)
        total = sum(v for _, v, _ in stacks)
        self.assertGreater(total, 400, "too few samples")
        leaf = sum(v for names, v, _ in stacks if names and names[0] == chain[0])
        self.assertGreaterEqual(leaf / total, 0.9, "samples in %s: %d/%d" % (chain[0], leaf,
                                                                              total))
        ok = sum(v for names, v, _ in stacks if full_chain(names, chain))
        bad = [names for names, v, _ in stacks if names and names[0] == chain[0]
               and not full_chain(names, chain)]
        self.assertGreaterEqual(ok / leaf, 0.95, "full chains %d/%d; e.g. %s" % (
            ok, leaf, bad[:2]))
        # Nothing left mangled, in our code or in std.
        mangled = {n for names, _, _ in stacks for n in names
                   if n.startswith("_R") or n.startswith("_ZN")}
        self.assertEqual(mangled, set())
        return stacks

    def test_v0(self):
        stacks = self.check("rust_v0", CHAIN_V0)
        names = {n for ns, _, _ in stacks for n in ns}
        self.assertIn("std::rt::lang_start_internal", names)

    def test_legacy(self):
        self.check("rust_legacy", CHAIN_LEGACY)


if __name__ == "__main__":
    from itutil import run_main

    raise SystemExit(run_main())
