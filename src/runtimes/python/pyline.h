/* SPDX-License-Identifier: Apache-2.0 */
/* CPython line numbers: a pure-C port of PyCode_Addr2Line for CPython 3.10 to 3.14. */
#ifndef MLPROF_PYLINE_H
#define MLPROF_PYLINE_H

#include <stddef.h>
#include <stdint.h>

/* Lowest and highest CPython 3.<minor> whose line tables pyline__addr2line() reads. */
#define PYLINE_MINOR_MIN 10
#define PYLINE_MINOR_MAX 14

/*
 * Returns the source line of the instruction at byte offset addrq in a code object,
 * exactly as CPython's PyCode_Addr2Line(co, addrq) does for that version:
 *   minor: CPython 3.<minor> (10..14; other values return -2)
 *   table/len: the bytes of co_linetable (3.10 format for minor 10; the 3.11+ location
 *              table for 11..14); untrusted input: never read out of bounds
 *   firstlineno: co_firstlineno
 *   addrq: byte offset of the instruction (code units * 2); addrq < 0 returns firstlineno
 * Returns the line (>= 0), -1 when that instruction has no line (what co_lines() gives as
 * None), or -2 for a bad version. An addrq past the end of the table returns -1.
 *
 * Corrupt tables: reading stops at table + len (a varint or a 3.10 pair cut short by the
 * end reads as if the missing bytes were 0 / as the end of the table), varint bits past
 * 32 are dropped, line arithmetic wraps as CPython's int does, and a line that comes out
 * negative (only a corrupt table or a negative firstlineno gives one) is reported as -1.
 * Pure function: no allocation, no global state, cannot fail otherwise. Cost: linear in
 * the number of table entries before addrq, as in CPython.
 */
int pyline__addr2line(int minor, const uint8_t *table, size_t len, int firstlineno, int64_t addrq);

#endif
