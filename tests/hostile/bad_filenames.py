# SPDX-License-Identifier: Apache-2.0
"""Hostile process for test_hostile.BadStrings: Python functions whose code objects carry
a file name with a lone surrogate (what os.fsdecode makes of a non-UTF-8 path) and a name
with one, burning CPU. Prints {"ready": 1} when running, then runs for SECONDS.
    bad_filenames.py SECONDS"""
import sys
import time

seconds = float(sys.argv[1])
ns = {"time": time}
exec("def work(end):\n"
     "    n = 0\n"
     "    while time.time() < end:\n"
     "        n += sum(range(500))\n"
     "    return n\n", ns)
f = ns["work"]
f.__code__ = f.__code__.replace(co_filename="/tmp/bad_\udcff_dir/w\ud800rk.py",
                                co_name="bad_\udcff_name", co_qualname="bad_\udcff_name")
print('{"ready": 1}', flush=True)
f(time.time() + seconds)
