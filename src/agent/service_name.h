/* SPDX-License-Identifier: Apache-2.0 */
/* What a process runs, from its command line and mapped files: service name, ML or not. */
#ifndef MLPROF_SERVICE_NAME_H
#define MLPROF_SERVICE_NAME_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Derives a service name from a NUL-separated command line (as in /proc/PID/cmdline):
 *  - python[X[.Y]] SCRIPT.py ...        -> SCRIPT (basename without .py)
 *  - python -m MODULE ...               -> MODULE (dotted name kept)
 *  - launchers (torchrun, python -m torch.distributed.run/launch, deepspeed, accelerate
 *    launch, mpirun, srun, uv/poetry run, env VAR=..) -> the script or program they run
 *  - sh/bash [OPTIONS] SCRIPT.sh        -> SCRIPT (options and their arguments skipped:
 *                                          bash -o pipefail -c ... is "bash")
 *  - a program read from a pipe or descriptor (bash /dev/fd/3) -> the interpreter
 *  - anything else                      -> basename of argv[0]
 * Falls back to comm when the command line is empty (kernel threads, exited processes).
 * The result is a sanitized label value. Writes into out (NUL-terminated) and returns out.
 */
char *labels__service_from_cmdline(const char *cmdline, size_t len, const char *comm, char *out,
				   size_t outlen);

/* Where a derived service name came from (the labeler groups the weak kinds, labels.c). */
enum service_origin {
	SERVICE_FROM_SCRIPT, /* a script, module or launcher: names the job itself */
	SERVICE_FROM_EXE,   /* the executable's own name (sleep, grep, python3 -c, a login shell) */
	SERVICE_FROM_SHELL, /* a shell running commands (bash -c ..., sh -s, bash /dev/fd/3) */
	SERVICE_FROM_COMM,  /* no command line: the process name (comm) */
};

/* Whether argv0 (a path, "-bash" for a login shell) is a shell: sh, bash, dash, zsh. */
bool labels__is_shell(const char *argv0);

/* As labels__service_from_cmdline(), and says where the name came from. */
enum service_origin labels__service_derive(const char *cmdline, size_t len, const char *comm,
					   char *out, size_t outlen);

/* Classification of a process by its mappings (the --ml-only filter). */
#define ML_PYTHON    0x1 /* libpython mapped or a python executable */
#define ML_FRAMEWORK 0x2 /* torch, tensorflow or jax/xla libraries */
#define ML_CUDA	     0x4 /* CUDA runtime/driver/cuBLAS/cuDNN/NCCL libraries */
/* Returns the ML_* bits one mapped path contributes. */
unsigned int labels__ml_classify_path(const char *path);
/* A process is an ML process when it runs Python and maps a framework or CUDA library. */
static inline bool labels__is_ml(unsigned int bits)
{
	return (bits & ML_PYTHON) && (bits & (ML_FRAMEWORK | ML_CUDA));
}

#endif
