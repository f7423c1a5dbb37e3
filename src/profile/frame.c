// SPDX-License-Identifier: Apache-2.0
/* Frame idents: the unique numbers producers give to frame contents (see frame.h). */
#include "profile/frame.h"

#include <stdatomic.h>

static _Atomic uint64_t next_ident = 1;

/* See frame.h. */
uint64_t frame__new_ident(void)
{
	return atomic_fetch_add_explicit(&next_ident, 1, memory_order_relaxed);
}
