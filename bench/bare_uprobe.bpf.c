// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* The bench's "bare uprobe": an empty program, so what it costs is the uprobe itself. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("uprobe")
int bare(void *ctx)
{
	return 0;
}
