// SPDX-License-Identifier: Apache-2.0
/*
 * For it.record_cuda's bad-input cases: dlopen LIBRARY, wait WAIT_MS (mlprof looks at the
 * new mapping meanwhile), then call its function SYMBOL (void (*)(void)) CALLS times.
 * Prints one JSON line.
 *
 * Usage: dlopen_call LIBRARY SYMBOL CALLS [WAIT_MS]
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	void *h;
	void (*fn)(void);
	int calls, wait_ms;
	struct timespec w;

	if (argc < 4) {
		fprintf(stderr, "usage: dlopen_call LIBRARY SYMBOL CALLS [WAIT_MS]\n");
		return 2;
	}
	calls = atoi(argv[3]);
	wait_ms = argc > 4 ? atoi(argv[4]) : 300;
	w.tv_sec = wait_ms / 1000;
	w.tv_nsec = (long)(wait_ms % 1000) * 1000000L;
	h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "dlopen_call: %s\n", dlerror());
		return 2;
	}
	*(void **)&fn = dlsym(h, argv[2]);
	if (!fn) {
		fprintf(stderr, "dlopen_call: no %s in %s\n", argv[2], argv[1]);
		return 2;
	}
	nanosleep(&w, NULL);
	for (int i = 0; i < calls; i++)
		fn();
	printf("{\"pid\": %d, \"calls\": %d}\n", (int)getpid(), calls);
	return 0;
}
