/* SPDX-License-Identifier: Apache-2.0 */
/* Symbol demangling: C++ (Itanium) and Rust (legacy and v0). */
#ifndef MLPROF_DEMANGLE_H
#define MLPROF_DEMANGLE_H

/*
 * Demangles a C++ (Itanium, libstdc++'s __cxa_demangle) or Rust symbol (legacy
 * "_ZN...17h<hash>E" and v0 "_R...", libiberty's rust_demangle). Rust names come out as
 * rustc-demangle's alternate form prints them: no hash, no crate disambiguators
 * ("prog::outer::inner", "<T as Trait>::method"); a ".llvm.<hash>" suffix is dropped, other
 * suffixes (".cold") are kept. Returns a malloc'd string the caller frees: the name as it
 * is when it is not mangled (or not valid); NULL with errno set only on a NULL argument
 * (EINVAL) or out of memory.
 */
char *demangle(const char *mangled);

#endif
