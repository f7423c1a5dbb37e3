# SPDX-License-Identifier: Apache-2.0
"""Independent, dependency-free reader of pprof files for mlprof's tests.

Decodes the protobuf wire format by hand (no code shared with mlprof's C encoder), so a
test that reads a profile with this module checks what any pprof consumer would see.
"""
import gzip


def _varint(buf, i):
    shift = result = 0
    while True:
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, i
        shift += 7


def _fields(buf):
    """Yields (field_number, wire_type, value) for one message."""
    i, n = 0, len(buf)
    while i < n:
        key, i = _varint(buf, i)
        fn, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _varint(buf, i)
        elif wt == 1:
            v = int.from_bytes(buf[i:i + 8], "little")
            i += 8
        elif wt == 2:
            ln, i = _varint(buf, i)
            v = buf[i:i + ln]
            i += ln
        elif wt == 5:
            v = int.from_bytes(buf[i:i + 4], "little")
            i += 4
        else:
            raise ValueError("bad wire type %d" % wt)
        yield fn, wt, v


def _packed(wt, v):
    if wt == 0:
        return [v]
    out, i = [], 0
    while i < len(v):
        x, i = _varint(v, i)
        out.append(x)
    return out


def _signed(x):
    return x - (1 << 64) if x >= 1 << 63 else x


class Profile:
    def __init__(self, data):
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        self.strings = []
        self.sample_types = []
        self.samples = []  # dicts: locs (leaf first), values, labels
        self.locations = {}
        self.functions = {}
        self.mappings = {}
        self.period_type = None
        self.period = 0
        self.time_nanos = 0
        self.duration_nanos = 0
        raw_samples, raw_types = [], []
        for fn, wt, v in _fields(data):
            if fn == 1:
                raw_types.append(v)
            elif fn == 2:
                raw_samples.append(v)
            elif fn == 3:
                m = {"id": 0, "start": 0, "limit": 0, "offset": 0, "file": 0, "build_id": 0}
                for f2, _, x in _fields(v):
                    key = {1: "id", 2: "start", 3: "limit", 4: "offset", 5: "file",
                           6: "build_id"}.get(f2)
                    if key:
                        m[key] = x
                self.mappings[m["id"]] = m
            elif fn == 4:
                loc = {"id": 0, "mapping": 0, "address": 0, "lines": []}
                for f2, _, x in _fields(v):
                    if f2 == 1:
                        loc["id"] = x
                    elif f2 == 2:
                        loc["mapping"] = x
                    elif f2 == 3:
                        loc["address"] = x
                    elif f2 == 4:
                        ln = {"function": 0, "line": 0}
                        for f3, _, y in _fields(x):
                            if f3 == 1:
                                ln["function"] = y
                            elif f3 == 2:
                                ln["line"] = _signed(y)
                        loc["lines"].append(ln)
                self.locations[loc["id"]] = loc
            elif fn == 5:
                fnc = {"id": 0, "name": 0, "filename": 0, "start_line": 0}
                for f2, _, x in _fields(v):
                    key = {1: "id", 2: "name", 4: "filename", 5: "start_line"}.get(f2)
                    if key:
                        fnc[key] = x
                self.functions[fnc["id"]] = fnc
            elif fn == 6:
                # strict: profile.proto's strings must be UTF-8 (strict decoders reject
                # the whole profile otherwise)
                self.strings.append(v.decode("utf-8"))
            elif fn == 9:
                self.time_nanos = _signed(v)
            elif fn == 10:
                self.duration_nanos = _signed(v)
            elif fn == 11:
                self.period_type = self._vt(v)
            elif fn == 12:
                self.period = _signed(v)
        self.sample_types = [self._vt(v) for v in raw_types]
        for raw in raw_samples:
            s = {"locs": [], "values": [], "labels": {}}
            for f2, wt, x in _fields(raw):
                if f2 == 1:
                    s["locs"] += _packed(wt, x)
                elif f2 == 2:
                    s["values"] += [_signed(y) for y in _packed(wt, x)]
                elif f2 == 3:
                    lab = {"key": 0, "str": 0, "num": None}
                    for f3, _, y in _fields(x):
                        if f3 == 1:
                            lab["key"] = y
                        elif f3 == 2:
                            lab["str"] = y
                        elif f3 == 3:
                            lab["num"] = _signed(y)
                    k = self.strings[lab["key"]]
                    s["labels"][k] = lab["num"] if lab["num"] is not None else \
                        self.strings[lab["str"]]
            self.samples.append(s)

    def _vt(self, v):
        t = u = 0
        for f2, _, x in _fields(v):
            if f2 == 1:
                t = x
            elif f2 == 2:
                u = x
        return (t, u)

    def type_names(self):
        return [(self.strings[t], self.strings[u]) for t, u in self.sample_types]

    def frame_names(self, loc_id):
        """Names of a location's lines (innermost first), or 'module+0xoff' when unnamed."""
        loc = self.locations[loc_id]
        names = [self.strings[self.functions[ln["function"]]["name"]]
                 for ln in loc["lines"] if ln["function"]]
        if names:
            return names
        m = self.mappings.get(loc["mapping"])
        if m:
            f = self.strings[m["file"]].rsplit("/", 1)[-1]
            return ["%s+0x%x" % (f, loc["address"] - m["start"] + m["offset"])]
        return ["0x%x" % loc["address"]]

    def frame_details(self, loc_id):
        """Lines of a location (innermost first) as dicts: name, file, line, start_line
        (file "" and numbers 0 when unknown); one unnamed dict for an unnamed location."""
        loc = self.locations[loc_id]
        out = []
        for ln in loc["lines"]:
            f = self.functions.get(ln["function"])
            if not f:
                continue
            out.append({"name": self.strings[f["name"]], "file": self.strings[f["filename"]],
                        "line": ln["line"], "start_line": _signed(f["start_line"])})
        if not out:
            out.append({"name": self.frame_names(loc_id)[0], "file": "", "line": 0,
                        "start_line": 0})
        return out

    def detailed_stacks(self):
        """Yields (frames leaf first as frame_details dicts, values, labels) per sample."""
        for s in self.samples:
            frames = []
            for lid in s["locs"]:
                frames += self.frame_details(lid)
            yield frames, s["values"], s["labels"]

    def stacks(self):
        """Yields (names leaf first, values, labels) for every sample."""
        for s in self.samples:
            names = []
            for lid in s["locs"]:
                names += self.frame_names(lid)
            yield names, s["values"], s["labels"]


def load(path):
    with open(path, "rb") as f:
        return Profile(f.read())
