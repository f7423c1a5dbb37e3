#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Dumps co_linetable and co_lines() of real code objects, for the C line-table port's test.
"""usage: pyline_dump.py

Runs under CPython 3.10 to 3.14. Compiles (never imports) a few standard-library
modules and an inline source full of awkward constructs, walks every code object
(co_consts, recursively), and adds seeded random but well-formed line tables put on
a dummy code object with code.replace(). Writes to stdout, one record a line:

  V MAJOR MINOR MICRO
  C TAG NAME FIRSTLINENO HEXTABLE|- N START END LINE ... K OFFSET LINE ...
  E                                             (end: the dump is complete)

N triples of co_lines() (a None line is written -1), then K pairs where CPython's own
PyCode_Addr2Line(), called through ctypes for every even offset, says otherwise than
co_lines(); K is -1 where it was not called (no ctypes; synthetic tables, which cover
more than their dummy co_code). TAG says where the code object comes from (module
name, "inline" or "synthetic").
"""
import importlib.util
import random
import sys

try:
    import ctypes

    ADDR2LINE = ctypes.pythonapi.PyCode_Addr2Line
    ADDR2LINE.argtypes = [ctypes.py_object, ctypes.c_int]
    ADDR2LINE.restype = ctypes.c_int
except (ImportError, AttributeError):
    ADDR2LINE = None

MODULES = [
    "json.decoder",
    "argparse",
    "dataclasses",
    "asyncio.base_events",
    "difflib",
    "typing",
    "email._header_value_parser",
]

# Multi-line expressions, comprehensions, try/except, lambdas, generators, nested
# functions, decorators, pass-only bodies, with statements, match, and gaps between
# statements of more than 64 (varint of two chunks) and 127 lines (3.10: split deltas).
INLINE_HEAD = '''
import functools

def deco(f):
    @functools.wraps(f)
    def wrapper(*a, **kw):
        return f(*a, **kw)
    return wrapper

@deco
@functools.lru_cache(maxsize=None)
def decorated(x,
              y=(1 +
                 2),
              *,
              z=lambda q: q *
              2):
    total = (x
             + y
             + z(3))
    return [i * j
            for i in range(total)
            for j in range(3)
            if i % 2
            if j]

def only_pass():
    pass

async def coro(aws):
    async with aws as a:
        async for b in a:
            await b
    return {k: v for k, v in
            aws.items()}

def gen(n):
    try:
        for i in range(n):
            yield i
            yield from (j
                        for j in range(i))
    except (ValueError,
            KeyError) as e:
        raise RuntimeError("x") from e
    finally:
        print("done")

def groups():
    try:
        raise ExceptionGroup("g", [TypeError()])
    except* TypeError:
        pass

def nested(a):
    def inner(b):
        def innermost(c):
            return a + b + c
        return innermost
    return inner(a)(
        a)

class K:
    attr = [x for x in range(3)]

    def method(self, v):
        match v:
            case [1, *rest]:
                return rest
            case {"k": w}:
                return w
            case K(attr=a) if a:
                return a
            case _:
                return None

    @property
    def prop(self):
        with open("f") as f, \\
                open("g") as g:
            return f.read() + g.read()

big_call = print(
    1,
    2,
    {
        "a": [
            1,
            2,
        ],
    },
)
'''


def inline_source():
    """INLINE_HEAD plus functions with large forward and backward line jumps."""
    parts = [INLINE_HEAD]
    # Forward jumps of 65, 130, 300 and 1000 lines inside one function.
    parts.append("def long_jumps(a):\n    x = a\n")
    for gap in (65, 130, 300, 1000):
        parts.append("    # gap\n" * gap)
        parts.append("    x = x + %d\n" % gap)
    # A loop whose body is far below its header: backward jump of > 300 lines.
    parts.append("    for i in range(3):\n")
    parts.append("        # gap\n" * 320)
    parts.append("        x += i\n")
    parts.append("    return x\n\n")
    # One line with many instructions (3.10: byte deltas > 255 split in pairs).
    parts.append("def wide_line(a):\n    return [%s]\n\n" %
                 ", ".join("a + %d" % i for i in range(400)))
    # A very long function: 2000 statements.
    parts.append("def very_long(a):\n")
    for i in range(2000):
        parts.append("    a = a * %d + %d\n" % (i % 7 + 1, i))
    parts.append("    return a\n")
    return "".join(parts)


def walk(code):
    yield code
    for c in code.co_consts:
        if isinstance(c, type(code)):
            yield from walk(c)


def emit(out, tag, code, call_addr2line=True):
    name = getattr(code, "co_qualname", code.co_name)
    name = "".join(ch if ch.isprintable() and not ch.isspace() else "_" for ch in name)
    table = code.co_linetable.hex() or "-"
    triples = list(code.co_lines())
    fields = ["C", tag, name or "_", str(code.co_firstlineno), table, str(len(triples))]
    differ = []
    for start, end, line in triples:
        line = -1 if line is None else line
        fields.append("%d %d %d" % (start, end, line))
        if ADDR2LINE is None or not call_addr2line:
            continue
        for off in range(start, min(end, len(code.co_code)), 2):
            got = ADDR2LINE(code, off)
            if got != line:
                differ.append("%d %d" % (off, got))
    if ADDR2LINE is None or not call_addr2line:
        fields.append("-1")
    else:
        fields.append(str(len(differ)))
        fields += differ
    out.write(" ".join(fields) + "\n")


def signed_varint(v):
    u = ((-v) << 1) | 1 if v < 0 else v << 1
    return varint(u)


def varint(u):
    out = []
    while u >= 64:
        out.append(64 | (u & 63))
        u >>= 6
    out.append(u)
    return out


def random_table_311(rng, line):
    """A well-formed 3.11+ location table of every entry kind (codes 0..15)."""
    table = []
    for _ in range(rng.randint(1, 40)):
        code = rng.choice(list(range(16)) + [13, 13, 14, 14, 15])
        length = rng.randint(1, 8)
        table.append(0x80 | (code << 3) | (length - 1))
        if code <= 9:
            table.append(rng.randint(0, 127))
        elif code <= 12:
            line += code - 10
            table += [rng.randint(0, 127), rng.randint(0, 127)]
        elif code == 13:
            delta = rng.choice([rng.randint(-70, 70), rng.randint(-900, 5000),
                                rng.randint(-(1 << 20), 1 << 24)])
            delta = max(delta, -line)  # keep lines >= 0: a negative line is not a line
            line += delta
            table += signed_varint(delta)
        elif code == 14:
            delta = max(rng.randint(-2000, 70000), -line)
            line += delta
            table += signed_varint(delta)
            table += varint(rng.randint(0, 300))
            table += varint(rng.randint(0, 200))
            table += varint(rng.randint(0, 200))
    return bytes(table)


def random_table_310(rng, line):
    """A well-formed 3.10 line table: (byte delta, line delta) pairs, -128 = no line."""
    table = []
    n = rng.randint(1, 40)
    for i in range(n):
        # zero-width entries only carry line deltas; never end the table with one
        sdelta = rng.choice([0, 2, 2, 4, 6, 8, 254]) if i < n - 1 else 2 * rng.randint(1, 8)
        if rng.random() < 0.15:
            ldelta = -128
        else:
            ldelta = max(rng.randint(-127, 127), -line)
            line += ldelta
        table += [sdelta, ldelta & 0xff]
    return bytes(table)


def main():
    out = sys.stdout
    vi = sys.version_info
    out.write("V %d %d %d\n" % (vi[0], vi[1], vi[2]))

    for mod in MODULES:
        spec = importlib.util.find_spec(mod)
        if spec is None or not spec.origin or not spec.origin.endswith(".py"):
            continue
        with open(spec.origin, "rb") as f:
            src = f.read()
        top = compile(src, spec.origin, "exec", dont_inherit=True)
        for code in walk(top):
            emit(out, mod, code)

    src = inline_source()
    if vi < (3, 11):
        src = src.replace("except* TypeError", "except TypeError")
        src = src.replace("ExceptionGroup(\"g\", [TypeError()])", "TypeError()")
    top = compile(src, "<pyline-inline>", "exec", dont_inherit=True)
    for code in walk(top):
        emit(out, "inline", code)

    rng = random.Random(4242)
    dummy = compile("pass", "<pyline-synthetic>", "exec")
    make = random_table_310 if vi < (3, 11) else random_table_311
    for i in range(300):
        firstlineno = rng.choice([1, 1000, 65535])
        table = make(rng, firstlineno)
        code = dummy.replace(co_linetable=table, co_firstlineno=firstlineno,
                             co_name="synthetic%d" % i)
        emit(out, "synthetic", code, call_addr2line=False)
    out.write("E\n")


if __name__ == "__main__":
    main()
