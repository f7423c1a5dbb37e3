// SPDX-License-Identifier: Apache-2.0
/* CPython line numbers: PyCode_Addr2Line ported from Objects/codeobject.c (3.10 to 3.14). */
#include <stdbool.h>

#include "runtimes/python/pyline.h"

/*
 * 3.11+ location table entry kinds (Include/internal/pycore_code.h,
 * PY_CODE_LOCATION_INFO_*): the code sits in bits 3..6 of an entry's first byte.
 */
enum {
	LOC_SHORT_LAST = 9, /* 0..9: short form, line unchanged, 1 column byte */
	LOC_ONE_LINE0 = 10, /* 10..12: line += code - 10, 2 column bytes */
	LOC_ONE_LINE2 = 12,
	LOC_NO_COLUMNS = 13, /* line += signed varint */
	LOC_LONG = 14,	     /* line += signed varint, then end line, column, end column */
	LOC_NONE = 15,	     /* no location; the running line is unchanged */
};

#define ENTRY_START  0x80 /* bit 7 marks the first byte of an entry */
#define VARINT_MORE  0x40 /* bit 6 of a varint byte: another 6-bit chunk follows */
#define NO_LINE_MARK 0x1f /* first byte >> 3 of a LOC_NONE entry (is_no_line_marker()) */

/* The line a running line stands for: CPython's int, and "no line" when negative. */
static int as_line(uint32_t line)
{
	int32_t v = (int32_t)line;

	return v < 0 ? -1 : v;
}

/*
 * CPython's scan_varint(): 6-bit chunks, least significant first. Stops at the end of
 * the table, and after the sixth chunk: a 32-bit value has no room for more bits, so
 * later chunks cannot change it (and a run of continuation bytes costs nothing).
 */
static uint32_t scan_varint(const uint8_t *t, size_t len, size_t pos)
{
	uint32_t val = 0;
	unsigned int shift;

	for (shift = 0; pos < len && shift < 32; shift += 6, pos++) {
		val |= (uint32_t)(t[pos] & 63) << shift;
		if (!(t[pos] & VARINT_MORE))
			break;
	}
	return val;
}

/* CPython's scan_signed_varint(): bit 0 is the sign, as two's complement in 32 bits. */
static uint32_t scan_signed_varint(const uint8_t *t, size_t len, size_t pos)
{
	uint32_t u = scan_varint(t, len, pos);

	return (u & 1) ? 0u - (u >> 1) : u >> 1;
}

/* CPython's get_line_delta() for the entry whose first byte is t[pos]. */
static uint32_t line_delta(const uint8_t *t, size_t len, size_t pos)
{
	int code = (t[pos] >> 3) & 15;

	if (code == LOC_NO_COLUMNS || code == LOC_LONG)
		return scan_signed_varint(t, len, pos + 1);
	if (code >= LOC_ONE_LINE0 && code <= LOC_ONE_LINE2)
		return (uint32_t)(code - LOC_ONE_LINE0);
	return 0; /* short forms and LOC_NONE keep the line */
}

/*
 * 3.11 to 3.14: PyCode_Addr2Line -> _PyCode_CheckLineNumber -> advance(). Each entry
 * covers (first byte & 7) + 1 code units; the next entry starts at the next byte with
 * bit 7 set. As advance(), the first byte of the table is taken as an entry whatever
 * its bit 7, and only 0b11111xxx (bit 7 and code 15) means "no line".
 */
static int addr2line_311(const uint8_t *t, size_t len, int firstlineno, int64_t addrq)
{
	uint32_t line = (uint32_t)firstlineno;
	int64_t end = 0;
	size_t pos = 0;

	while (pos < len) {
		bool no_line = (t[pos] >> 3) == NO_LINE_MARK;

		line += line_delta(t, len, pos);
		end += ((t[pos] & 7) + 1) * 2;
		do {
			pos++;
		} while (pos < len && !(t[pos] & ENTRY_START));
		/* entries are contiguous from 0, so this one starts at or before addrq */
		if (addrq < end)
			return no_line ? -1 : as_line(line);
	}
	return -1;
}

/*
 * 3.10: PyCode_Addr2Line over (u8 byte delta, s8 line delta) pairs; a line delta of
 * -128 means "no line" and leaves the running line alone. Zero-width pairs only carry
 * line deltas: PyLineTable_NextAddressRange skips them, and here addrq < end cannot
 * newly hold after one. A lone trailing byte, which
 * CPython would pair with the byte past the table, ends the table here.
 */
static int addr2line_310(const uint8_t *t, size_t len, int firstlineno, int64_t addrq)
{
	uint32_t line = (uint32_t)firstlineno;
	int64_t end = 0;
	size_t pos;

	for (pos = 0; len - pos >= 2; pos += 2) {
		int ldelta = t[pos + 1] < 128 ? t[pos + 1] : t[pos + 1] - 256;
		int cur;

		if (ldelta == -128) {
			cur = -1;
		} else {
			line += (uint32_t)ldelta;
			cur = as_line(line);
		}
		end += t[pos];
		if (addrq < end)
			return cur;
	}
	return -1;
}

int pyline__addr2line(int minor, const uint8_t *table, size_t len, int firstlineno, int64_t addrq)
{
	if (minor < PYLINE_MINOR_MIN || minor > PYLINE_MINOR_MAX)
		return -2;
	if (addrq < 0)
		return firstlineno < 0 ? -1 : firstlineno;
	if (!table)
		return -1;
	if (minor == 10)
		return addr2line_310(table, len, firstlineno, addrq);
	return addr2line_311(table, len, firstlineno, addrq);
}
