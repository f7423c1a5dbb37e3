// SPDX-License-Identifier: Apache-2.0
/* Unit tests for demangle(): Rust v0 and legacy (rustc-demangle's alternate form), C++. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "symbolize/demangle.h"

static void check_demangle(const char *in, const char *want)
{
	char *out = demangle(in);

	CHECK(out && strcmp(out, want) == 0, "demangle(%s) = \"%s\", want \"%s\"", in,
	      out ? out : "(null)", want);
	free(out);
}

/* v0 names as rustc 1.95 emits them for tests/rust/rust_chains.rs and its std. */
static void test_rust_v0(void)
{
	check_demangle("_RNvNtNtCs79A0ttCxRNg_11rust_chains5outer5inner9spin_leaf",
		       "rust_chains::outer::inner::spin_leaf");
	check_demangle("_RNvXNtCs79A0ttCxRNg_11rust_chains5outerNtB2_6BurnerNtB2_4Work4work",
		       "<rust_chains::outer::Burner as rust_chains::outer::Work>::work");
	check_demangle("_RINvNtCs79A0ttCxRNg_11rust_chains5outer12generic_stepNtB2_6BurnerEB4_",
		       "rust_chains::outer::generic_step::<rust_chains::outer::Burner>");
	check_demangle("_RNvCs79A0ttCxRNg_11rust_chains3run", "rust_chains::run");
	check_demangle("_RNCNCNCNvNtCsjrHSEGnQ3l9_3std2rt19lang_start_internal00s_0B9_",
		       "std::rt::lang_start_internal::{closure#0}::{closure#0}::{closure#1}");
	/* inherent impl, const generic, references and arrays, numeric crate name */
	check_demangle("_RNvMNtCs4u7wfNPddPR_4prog5outerNtB2_3Foo3run", "<prog::outer::Foo>::run");
	check_demangle("_RMCs4fqI2P2rA04_13const_genericINtB0_8UnsignedKhb_E",
		       "<const_generic::Unsigned<11>>");
	check_demangle("_RINvCs1234_7mycrate3fooRAhj10_EB2_", "mycrate::foo::<&[u8; 16]>");
	check_demangle("_RNvC6_123foo3bar", "123foo::bar");
	/* LLVM's ".llvm.<hash>" goes, other suffixes stay */
	check_demangle("_RNvCs79A0ttCxRNg_11rust_chains3run.llvm.8127364", "rust_chains::run");
	check_demangle("_RNvCs79A0ttCxRNg_11rust_chains3run.cold", "rust_chains::run.cold");
	/* not valid v0: returned as it is */
	check_demangle("_RNvC", "_RNvC");
	check_demangle("_R", "_R");
	check_demangle("_RNvCs79A0ttCxRNg_11rust_chains3ru", "_RNvCs79A0ttCxRNg_11rust_chains3ru");
}

static void test_rust_legacy(void)
{
	check_demangle("_ZN11rust_chains5outer5inner9spin_leaf17h984ed435e9325305E",
		       "rust_chains::outer::inner::spin_leaf");
	check_demangle("_ZN4core3fmt5write17h0123456789abcdefE", "core::fmt::write");
	check_demangle("_ZN60_$LT$alloc..string..String$u20$as$u20$core..fmt..Display$GT$"
		       "3fmt17h5a0b5c8e9f1d2a3bE",
		       "<alloc::string::String as core::fmt::Display>::fmt");
	check_demangle("_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17hfe2b1c2d3e4f5a6bE"
		       ".llvm.1234",
		       "std::rt::lang_start::{{closure}}");
	check_demangle("_ZN4core3fmt5write17h0123456789abcdefE.cold", "core::fmt::write.cold");
	/* 15 hex digits: not a Rust hash, and not valid C++ either */
	check_demangle("_ZN4core3fmt5write17h0123456789abcdeE",
		       "_ZN4core3fmt5write17h0123456789abcdeE");
}

static void test_cpp(void)
{
	char *out;
	char *big;

	check_demangle("_ZN2ns6WidgetIiE4spinEi", "ns::Widget<int>::spin(int)");
	check_demangle("_ZL12local_statici", "local_static(int)");
	check_demangle("_Z3fooi.cold", "foo(int) [clone .cold]");
	check_demangle("_ZN3foo3barEv", "foo::bar()");
	check_demangle("main", "main");
	check_demangle("_Zinvalid", "_Zinvalid");
	errno = 0;
	out = demangle(NULL);
	CHECK(out == NULL && errno == EINVAL, "NULL in: %p errno %d", (void *)out, errno);
	/* over the input bound: returned as it is, not parsed */
	big = malloc(20000);
	CHECK(big != NULL, "malloc");
	if (big) {
		memset(big, 'B', 19999);
		memcpy(big, "_RNv", 4);
		big[19999] = '\0';
		out = demangle(big);
		CHECK(out && strcmp(out, big) == 0, "long name not returned as is");
		free(out);
		free(big);
	}
}

int main(void)
{
	test_rust_v0();
	test_rust_legacy();
	test_cpp();
	return check_done("demangle");
}
