// SPDX-License-Identifier: Apache-2.0
/* The PyTorch scope BPF object: load, attach per libtorch_cpu file. */
#define LOG_MODULE "torch"
#include "util/log.h"

#include "capture/torch_probes.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/libbpf.h>

#include <mlprof/torch.h>

#include "capture/sampler_share.h"
#include "capture/uprobe_link.h"
#include "torch.skel.h"

struct torch_probes {
	struct torch_bpf *skel;
	bool multi;
};

/* See torch_probes.h. */
struct torch_probes *torch_probes__new(struct sampler *s)
{
	struct torch_probes *tp = calloc(1, sizeof(*tp));
	int err;

	if (!tp)
		return NULL;
	tp->skel = torch_bpf__open();
	if (!tp->skel) {
		err = -errno;
		pr_err("opening the PyTorch scope BPF object failed: %s", strerror(-err));
		free(tp);
		errno = -err;
		return NULL;
	}
	tp->multi = uprobe_link__multi_supported();
	err = tp->multi ? uprobe_link__prepare(tp->skel->progs.torch_entry)
				  ?: uprobe_link__prepare(tp->skel->progs.torch_return)
			: 0;
	if (!err)
		err = sampler_share_capture(s, tp->skel, "PyTorch scope")
			      ?: sampler__share_scope_runs(s, tp->skel->maps.scope_runs);
	if (!err)
		err = torch_bpf__load(tp->skel);
	if (err) {
		pr_err("loading the PyTorch scope BPF programs failed: %s", strerror(-err));
		torch_probes__free(tp);
		errno = -err;
		return NULL;
	}
	sampler__scope_cpu_start(s);
	return tp;
}

/* See torch_probes.h. */
void torch_probes__free(struct torch_probes *tp)
{
	if (!tp)
		return;
	torch_bpf__destroy(tp->skel);
	free(tp);
}

/* See torch_probes.h. */
struct uprobe_link *torch_probes__attach(struct torch_probes *tp, int fd,
					 const struct torch_sites *sites)
{
	char path[64];
	struct uprobe_target t[2 + TORCH_COMM_SITES] = {
		{.off = sites->enter_off,
		 .cookie = sites->enter_rec ? MLPROF_TP_ENTER_REC : MLPROF_TP_ENTER,
		 .ret = !sites->enter_rec},
		{.off = sites->end_off, .cookie = MLPROF_TP_END, .ret = false},
	};
	int n = 2;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	for (int i = 0; i < sites->n_comm && i < TORCH_COMM_SITES; i++)
		t[n++] = (struct uprobe_target){
			.off = sites->comm_off[i], .cookie = MLPROF_TP_COMM, .ret = true};
	return uprobe_link__attach(tp->skel->progs.torch_entry, tp->skel->progs.torch_return,
				   tp->multi, path, t, n, 0);
}

/* See torch_probes.h. */
bool torch_probes__can_cycle(const struct torch_probes *tp)
{
	return tp->multi;
}

/* See torch_probes.h. */
void torch_probes__next_gen(struct torch_probes *tp)
{
	__atomic_add_fetch(&tp->skel->bss->scope_gen, 1, __ATOMIC_RELEASE);
}
