/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The PyTorch scope BPF object (bpf/torch.bpf.c): loaded on first use, sharing the
 * sampler's ring buffer and pid filter; its probes are attached per libtorch_cpu file.
 */
#ifndef MLPROF_TORCH_PROBES_H
#define MLPROF_TORCH_PROBES_H

#include <stdint.h>

struct sampler;
struct torch_probes;
struct uprobe_link;

struct torch_probes *torch_probes__new(struct sampler *s);
void torch_probes__free(struct torch_probes *tp);

/*
 * Attaches record_function_enter_new (file offset enter_off, with its return) and
 * at::RecordFunction::end (end_off) of the ELF file at path, for every process (BPF filters
 * by pid). The links (uprobe_link__release) or NULL with errno set.
 */
struct uprobe_link *torch_probes__attach(struct torch_probes *tp, const char *path,
					 uint64_t enter_off, uint64_t end_off);

#endif
