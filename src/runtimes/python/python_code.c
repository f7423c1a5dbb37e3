// SPDX-License-Identifier: Apache-2.0
/* CPython code objects read from process memory: names, files, line tables; bounded cache. */
#define LOG_MODULE "python"
#include "util/log.h"

#include "runtimes/python/python_code.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include <mlprof/python.h>

#include "profile/frame.h"
#include "runtimes/python/pyline.h"
#include "runtimes/python/python_layout.h"
#include "util/lru.h"

#define PC_BUCKETS 4096
/* Longest name or file name kept (longer ones are cut). */
#define STR_CAP 1024
/* Largest line table read (a 1 MiB table is a function of tens of thousands of lines). */
#define LINETABLE_MAX (1u << 20)
/*
 * Line tables up to this size are kept with their code object; larger ones are read again
 * for each new instruction offset and only the answers kept (memo), so that a process with
 * many huge tables cannot make the cache evict and re-read them on every sample.
 */
#define LINETABLE_KEEP (64u << 10)
/*
 * Line-table bytes read per sample at most: past it, frames show their first line
 * (counted, lt_over_budget) and their tables are read by a later sample. Bounds what one
 * sample of a hostile process costs (185 frames of 1 MiB tables each were 185 MiB).
 */
#define SAMPLE_LT_BUDGET (2u << 20)
/* Remembered (instruction -> line) answers per code object. */
#define MEMO_SLOTS 16

struct pc_entry {
	pid_t pid;
	uint64_t image, code;
	uint32_t validator;
	int fail;	 /* 0, or a -errno the lookup keeps returning */
	int fail_reason; /* enum pycode_fail, with fail */
	char *name, *file;
	uint64_t ident; /* frame ident of (name, file, first_line): frame__new_ident */
	int first_line;
	int minor;
	uint16_t adaptive;
	uint8_t *lt;	 /* the line table when kept (<= LINETABLE_KEEP), else NULL */
	size_t lt_len;	 /* its length in the process (0: none, or unreadable) */
	uint64_t lt_obj; /* the bytes object holding it, for reading it later */
	size_t bytes;
	uint64_t stamp; /* sample serial of the last use */
	struct {
		int64_t addrq; /* INT64_MIN = empty */
		int line;
	} memo[MEMO_SLOTS];
	struct pc_entry *hnext;
	struct lru_node lru;
};

struct pycode_cache {
	size_t max_bytes;
	struct pc_entry *buckets[PC_BUCKETS];
	struct lru_list lru; /* head = most recently used */
	uint64_t serial;
	size_t sample_lt_bytes; /* line-table bytes read in this sample */
	struct pycode_stats stats;
};

static uint32_t key_hash(pid_t pid, uint64_t code)
{
	uint64_t h = (uint64_t)pid * 0x9e3779b97f4a7c15ull ^ (code >> 4) * 0xff51afd7ed558ccdull;

	return (uint32_t)(h ^ (h >> 29)) % PC_BUCKETS;
}

static void entry_free(struct pc_entry *e)
{
	free(e->name);
	free(e->file);
	free(e->lt);
	free(e);
}

static void entry_remove(struct pycode_cache *pc, struct pc_entry *e)
{
	struct pc_entry **pp = &pc->buckets[key_hash(e->pid, e->code)];

	while (*pp && *pp != e)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = e->hnext;
	lru__unlink(&pc->lru, &e->lru);
	pc->stats.entries--;
	pc->stats.bytes -= e->bytes;
	entry_free(e);
}

/* Evicts least recently used entries past the bound, never those of the current sample. */
static void evict(struct pycode_cache *pc)
{
	struct pc_entry *tail;

	while (pc->stats.bytes > pc->max_bytes &&
	       (tail = lru_entry(pc->lru.tail, struct pc_entry, lru)) &&
	       tail->stamp != pc->serial) {
		entry_remove(pc, tail);
		pc->stats.evictions++;
	}
}

/* See python_code.h. */
struct pycode_cache *pycode_cache__new(size_t max_bytes)
{
	struct pycode_cache *pc = calloc(1, sizeof(*pc));

	if (!pc)
		return NULL;
	pc->max_bytes = max_bytes ? max_bytes : PYCODE_DEFAULT_MAX_BYTES;
	return pc;
}

/* See python_code.h. */
void pycode_cache__free(struct pycode_cache *pc)
{
	if (!pc)
		return;
	while (pc->lru.head)
		entry_remove(pc, lru_entry(pc->lru.head, struct pc_entry, lru));
	free(pc);
}

/* See python_code.h. */
void pycode_cache__begin_sample(struct pycode_cache *pc)
{
	pc->serial++;
	pc->sample_lt_bytes = 0;
}

/* See python_code.h. */
void pycode_cache__forget(struct pycode_cache *pc, pid_t pid)
{
	struct pc_entry *e = lru_entry(pc->lru.head, struct pc_entry, lru), *next;

	/* a linear pass: exits are rare next to lookups, and entries are bounded */
	for (; e; e = next) {
		next = lru_entry(e->lru.next, struct pc_entry, lru);
		if (e->pid == pid)
			entry_remove(pc, e);
	}
}

/* See python_code.h. */
void pycode_cache__stats(const struct pycode_cache *pc, struct pycode_stats *out)
{
	*out = pc->stats;
}

/* See python_code.h. */
const char *const pycode_fail_names[PYCODE_FAIL__COUNT] = {
	[PYCODE_FAIL_READ] = "unreadable_memory", [PYCODE_FAIL_TYPE] = "unreadable_not_code",
	[PYCODE_FAIL_STALE] = "unreadable_stale", [PYCODE_FAIL_STRING] = "unreadable_string",
	[PYCODE_FAIL_NOMEM] = "unreadable_nomem",
};

struct mem_ctx {
	pid_t pid;
};

/* Reads len bytes of process memory at addr: 0 or -EFAULT. */
static int mem_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct mem_ctx *m = ctx;
	struct iovec local = {.iov_base = buf, .iov_len = len};
	struct iovec remote = {.iov_base = (void *)(uintptr_t)addr, .iov_len = len};

	if (!addr || process_vm_readv(m->pid, &local, 1, &remote, 1, 0) != (ssize_t)len)
		return -EFAULT;
	return 0;
}

static size_t put_utf8(char *dst, uint32_t cp)
{
	if (cp < 0x80) {
		dst[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		dst[0] = (char)(0xc0 | (cp >> 6));
		dst[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp >= 0xd800 && cp <= 0xdfff)
		cp = 0xfffd; /* a lone surrogate (os.fsdecode of a non-UTF-8 path) */
	if (cp < 0x10000) {
		dst[0] = (char)(0xe0 | (cp >> 12));
		dst[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		dst[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	if (cp > 0x10ffff)
		cp = 0xfffd;
	dst[0] = (char)(0xf0 | (cp >> 18));
	dst[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	dst[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	dst[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* See python_code.h. */
int pycode__decode_str(const struct py_layout *l, uint64_t addr, pycode_read_cb read_cb, void *ctx,
		       char *buf, size_t cap)
{
	uint8_t hdr[128], data[STR_CAP * 4];
	uint32_t state;
	int64_t length;
	unsigned int kind;
	bool ascii;
	size_t n, out = 0;

	if (cap < 8 || l->str_compact_data > sizeof(hdr) - 8 ||
	    read_cb(ctx, addr, hdr, l->str_compact_data))
		return -EINVAL;
	memcpy(&length, hdr + l->str_length, sizeof(length));
	memcpy(&state, hdr + l->str_state, sizeof(state));
	kind = (state >> 2) & 7;
	ascii = (state >> 6) & 1;
	/* compact strings only: code object names and file names always are */
	if (!((state >> 5) & 1) || (kind != 1 && kind != 2 && kind != 4) || length < 0 ||
	    (ascii && kind != 1))
		return -EINVAL;
	n = (size_t)length;
	if (n > STR_CAP)
		n = STR_CAP;
	if (n &&
	    read_cb(ctx, addr + (ascii ? l->str_ascii_data : l->str_compact_data), data, n * kind))
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		uint32_t cp;
		char tmp[4];
		size_t k;

		if (kind == 1)
			cp = data[i];
		else if (kind == 2)
			cp = (uint32_t)data[2 * i] | (uint32_t)data[2 * i + 1] << 8;
		else
			memcpy(&cp, data + 4 * i, 4);
		k = put_utf8(tmp, cp);
		if (out + k + 1 > cap)
			break;
		memcpy(buf + out, tmp, k);
		out += k;
	}
	buf[out] = '\0';
	return (int)out;
}

static int64_t load_i64(const uint8_t *b, size_t off)
{
	int64_t v;

	memcpy(&v, b + off, sizeof(v));
	return v;
}

static uint64_t load_u64(const uint8_t *b, size_t off)
{
	uint64_t v;

	memcpy(&v, b + off, sizeof(v));
	return v;
}

/* Reads and decodes the code object into e. Returns 0 or -EFAULT/-EINVAL/-ESTALE. */
static int entry_fill(struct pycode_cache *pc, struct pc_entry *e, const struct py_layout *l,
		      uint64_t code_type)
{
	struct mem_ctx m = {.pid = e->pid};
	uint8_t co[512], bh[64];
	char name[STR_CAP * 2], file[STR_CAP * 2];
	__u64 words[MLPROF_PY_VAL_WORDS];
	uint64_t lt_obj;
	int64_t lt_len;
	int32_t first;

	if (l->co_read > sizeof(co) || (size_t)l->bytes_data + 8 > sizeof(bh) ||
	    (size_t)l->bytes_size + 8 > l->bytes_data)
		return -EINVAL;
	pc->stats.reads++;
	if (mem_read(&m, e->code, co, l->co_read)) {
		pc->stats.failed[PYCODE_FAIL_READ]++;
		e->fail_reason = PYCODE_FAIL_READ;
		return -EFAULT;
	}
	if (code_type && load_u64(co, l->ob_type) != code_type) {
		pc->stats.failed[PYCODE_FAIL_TYPE]++;
		e->fail_reason = PYCODE_FAIL_TYPE;
		return -EINVAL;
	}
	memcpy(words, co + l->bpf.co_val, l->bpf.co_val_words * 8u);
	if (mlprof_py_validator(words, l->bpf.co_val_words) != e->validator) {
		pc->stats.failed[PYCODE_FAIL_STALE]++;
		e->fail_reason = PYCODE_FAIL_STALE;
		return -ESTALE;
	}
	memcpy(&first, co + l->co_firstlineno, sizeof(first));
	if (pycode__decode_str(l, load_u64(co, l->co_name), mem_read, &m, name, sizeof(name)) < 0 ||
	    pycode__decode_str(l, load_u64(co, l->co_filename), mem_read, &m, file, sizeof(file)) <
		    0) {
		pc->stats.failed[PYCODE_FAIL_STRING]++;
		e->fail_reason = PYCODE_FAIL_STRING;
		return -EINVAL;
	}
	e->name = strdup(name);
	e->file = strdup(file);
	if (!e->name || !e->file)
		return -ENOMEM;
	e->first_line = first;
	e->minor = l->minor;
	e->adaptive = l->co_code_adaptive;
	/*
	 * The line table is optional (without it every frame shows its first line) and read
	 * when a line is first asked for (entry_line), within the sample's budget.
	 */
	lt_obj = load_u64(co, l->co_linetable);
	if (lt_obj && !mem_read(&m, lt_obj, bh, l->bytes_data)) {
		lt_len = load_i64(bh, l->bytes_size);
		if (lt_len > LINETABLE_MAX) {
			pc->stats.lt_too_large++;
		} else if (lt_len > 0) {
			e->lt_obj = lt_obj + l->bytes_data;
			e->lt_len = (size_t)lt_len;
		}
	}
	e->bytes = sizeof(*e) + strlen(e->name) + strlen(e->file) + 2;
	return 0;
}

/*
 * The line table of e for one lookup: the kept one, else read now (kept when small) within
 * the sample's budget. Returns it (*tmp: to be freed by the caller when not kept) or NULL.
 */
static const uint8_t *entry_table(struct pycode_cache *pc, struct pc_entry *e, uint8_t **tmp)
{
	struct mem_ctx m = {.pid = e->pid};
	uint8_t *buf;

	*tmp = NULL;
	if (e->lt || !e->lt_len)
		return e->lt;
	if (pc->sample_lt_bytes + e->lt_len > SAMPLE_LT_BUDGET) {
		pc->stats.lt_over_budget++;
		return NULL;
	}
	pc->sample_lt_bytes += e->lt_len;
	pc->stats.lt_reads++;
	buf = malloc(e->lt_len);
	if (!buf)
		return NULL;
	if (mem_read(&m, e->lt_obj, buf, e->lt_len)) {
		free(buf);
		e->lt_len = 0; /* unreadable: first lines from now on */
		return NULL;
	}
	if (e->lt_len > LINETABLE_KEEP) {
		*tmp = buf;
		return buf;
	}
	e->lt = buf;
	e->bytes += e->lt_len;
	pc->stats.bytes += e->lt_len;
	return buf;
}

/* Line of instruction instr (as the walker reported it) in e. */
static int entry_line(struct pycode_cache *pc, struct pc_entry *e, uint32_t instr)
{
	const uint8_t *lt;
	uint8_t *tmp;
	int64_t addrq;
	unsigned int slot;
	int line;

	if (e->minor == 10) {
		int32_t lasti = (int32_t)instr;

		addrq = lasti < 0 ? -1 : (int64_t)lasti * 2;
	} else {
		addrq = (int64_t)instr - e->adaptive;
		if (addrq < 0)
			addrq = -1;
	}
	if (!e->lt_len || addrq < 0 || addrq > (int64_t)e->lt_len * 64)
		return e->first_line;
	slot = (unsigned int)(addrq >> 1) % MEMO_SLOTS;
	if (e->memo[slot].addrq == addrq)
		return e->memo[slot].line;
	lt = entry_table(pc, e, &tmp);
	if (!lt)
		return e->first_line;
	line = pyline__addr2line(e->minor, lt, e->lt_len, e->first_line, addrq);
	free(tmp);
	if (line < 0)
		line = e->first_line;
	e->memo[slot].addrq = addrq;
	e->memo[slot].line = line;
	return line;
}

/* See python_code.h. */
int pycode_cache__lookup(struct pycode_cache *pc, pid_t pid, uint64_t image,
			 const struct py_layout *l, uint64_t code_type, uint64_t code,
			 uint32_t validator, uint32_t instr, struct pycode_frame *out)
{
	uint32_t h = key_hash(pid, code);
	struct pc_entry *e;
	int err;

	for (e = pc->buckets[h]; e; e = e->hnext) {
		if (e->pid == pid && e->code == code && e->image == image &&
		    e->validator == validator)
			break;
	}
	if (e) {
		pc->stats.hits++;
		lru__unlink(&pc->lru, &e->lru);
	} else {
		e = calloc(1, sizeof(*e));
		if (!e) {
			out->fail = PYCODE_FAIL_NOMEM;
			return -ENOMEM;
		}
		e->pid = pid;
		e->image = image;
		e->code = code;
		e->validator = validator;
		e->ident = frame__new_ident();
		for (int i = 0; i < MEMO_SLOTS; i++)
			e->memo[i].addrq = INT64_MIN;
		err = entry_fill(pc, e, l, code_type);
		if (err) {
			/* remembered, so that a dead process costs one read per code object */
			free(e->name);
			free(e->file);
			free(e->lt);
			e->name = e->file = NULL;
			e->lt = NULL;
			e->lt_len = 0;
			e->fail = err;
			e->bytes = sizeof(*e);
		}
		e->hnext = pc->buckets[h];
		pc->buckets[h] = e;
		pc->stats.entries++;
		pc->stats.bytes += e->bytes;
	}
	e->stamp = pc->serial;
	lru__push_head(&pc->lru, &e->lru);
	if (e->fail) {
		evict(pc);
		out->fail = e->fail == -ENOMEM ? PYCODE_FAIL_NOMEM : e->fail_reason;
		return e->fail;
	}
	out->name = e->name;
	out->file = e->file;
	out->ident = e->ident;
	out->first_line = e->first_line;
	out->line = entry_line(pc, e, instr);
	evict(pc); /* after the line: a table kept just now counts */
	return 0;
}
