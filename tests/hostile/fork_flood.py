# SPDX-License-Identifier: Apache-2.0
"""Hostile process for test_hostile.ForkFlood: burns CPU until the file TRIGGER exists (so
the profiler has recognized its interpreter), then forks COUNT children that sleep (each
inherits its entry in the kernel's table of Python processes), one every 5 ms, and goes
on burning CPU, for SECONDS in all. Prints {"ready": 1} at once.
    fork_flood.py TRIGGER COUNT SECONDS"""
import json
import os
import sys
import time

trigger, count, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
print(json.dumps({"ready": 1}), flush=True)
end = time.time() + seconds
kids, n = [], 0
while time.time() < end:
    n += sum(range(500))
    if len(kids) < count and os.path.exists(trigger):
        pid = os.fork()
        if pid == 0:
            time.sleep(max(0.0, end - time.time()))
            os._exit(0)
        kids.append(pid)
        time.sleep(0.005)
for pid in kids:
    os.kill(pid, 9)
    os.waitpid(pid, 0)
