# SPDX-License-Identifier: Apache-2.0
# Fixture binaries for unit.elf / unit.symcache, built at build time with the system toolchain:
# full (.symtab), stripped (.dynsym only), MiniDebugInfo (.gnu_debugdata, Fedora recipe),
# separate debug file by build id (plus the same under a fake container root) and by debuglink.

find_program(SYM_GCC NAMES gcc REQUIRED)
find_program(SYM_GXX NAMES g++ REQUIRED)
find_program(SYM_OBJCOPY NAMES objcopy REQUIRED)
find_program(SYM_STRIP NAMES strip REQUIRED)
find_program(SYM_NM NAMES nm REQUIRED)
find_program(SYM_READELF NAMES readelf REQUIRED)
find_program(SYM_XZ NAMES xz REQUIRED)

set(SYM_FIXTURE_SRC ${CMAKE_CURRENT_SOURCE_DIR}/fixtures)
set(SYM_FIXTURE_DIR ${CMAKE_CURRENT_BINARY_DIR}/sym)
set(SYM_FIXTURE_SCRIPT ${CMAKE_CURRENT_BINARY_DIR}/sym_fixtures.sh)

# The recipe as a generated shell script (build tree only): pipes and $(...) need a shell.
file(WRITE ${SYM_FIXTURE_SCRIPT} [=[
#!/bin/sh
# usage: sym_fixtures.sh SRC_DIR OUT_DIR ; tools from the environment (CC, CXX, ...)
set -eu
src=$1
out=$2
rm -rf "$out"
mkdir -p "$out"
cd "$out"
flags="-O0 -g -fno-inline -fno-omit-frame-pointer -rdynamic -Wl,--build-id=sha1"

buildid() { "$READELF" -n "$1" | sed -n 's/.*Build ID: *//p'; }

# C program: full and stripped
"$CC" $flags -o c_full "$src/sym_fixture.c"
"$NM" --defined-only c_full > c_full.nm
buildid c_full > c_full.buildid
"$STRIP" --strip-all -o c_stripped c_full
"$CC" -O0 -g -fno-inline -Wl,--build-id=none -o c_nobid "$src/sym_fixture.c"
"$NM" --defined-only c_nobid > c_nobid.nm

# C++ program: full and stripped
"$CXX" $flags -o cpp_full "$src/sym_fixture_cpp.cc"
"$NM" --defined-only cpp_full > cpp_full.nm
buildid cpp_full > cpp_full.buildid
"$STRIP" --strip-all -o cpp_stripped cpp_full

# MiniDebugInfo, as Fedora builds it (gdb manual, "MiniDebugInfo")
"$NM" -D cpp_full --format=posix --defined-only | awk '{ print $1 }' | sort > mdi.dynsyms
"$NM" cpp_full --format=posix --defined-only |
	awk '{ if ($2 == "T" || $2 == "t" || $2 == "D") print $1 }' | sort > mdi.funcsyms
comm -13 mdi.dynsyms mdi.funcsyms > mdi.keep
"$OBJCOPY" --only-keep-debug cpp_full mdi.debug
"$OBJCOPY" -S --remove-section .gdb_index --remove-section .comment \
	--keep-symbols=mdi.keep mdi.debug mdi.mini
"$XZ" -f mdi.mini
"$STRIP" --strip-all -R .comment -o cpp_minidebug cpp_full
"$OBJCOPY" --add-section .gnu_debugdata=mdi.mini.xz cpp_minidebug

# Separate debug file by build id: debugroot/.build-id/ab/cdef....debug
id=$(cat cpp_full.buildid)
head=$(echo "$id" | cut -c1-2)
tail=$(echo "$id" | cut -c3-)
mkdir -p "debugroot/.build-id/$head" "fakeroot/usr/lib/debug/.build-id/$head" emptyroot
"$OBJCOPY" --only-keep-debug cpp_full "debugroot/.build-id/$head/$tail.debug"
cp "debugroot/.build-id/$head/$tail.debug" "fakeroot/usr/lib/debug/.build-id/$head/$tail.debug"
"$STRIP" --strip-all -o cpp_buildid cpp_full

# debuglink: the right file in dl/.debug/, a decoy with a wrong CRC next to the binary
mkdir -p dl/.debug
"$OBJCOPY" --only-keep-debug cpp_full dl/.debug/cpp_debuglink.debug
"$STRIP" --strip-all -o dl/cpp_debuglink cpp_full
"$OBJCOPY" --add-gnu-debuglink=dl/.debug/cpp_debuglink.debug dl/cpp_debuglink
cp c_full dl/cpp_debuglink.debug
touch stamp
]=])

add_custom_command(
  OUTPUT ${SYM_FIXTURE_DIR}/stamp
  COMMAND ${CMAKE_COMMAND} -E env CC=${SYM_GCC} CXX=${SYM_GXX} OBJCOPY=${SYM_OBJCOPY}
          STRIP=${SYM_STRIP} NM=${SYM_NM} READELF=${SYM_READELF} XZ=${SYM_XZ}
          sh ${SYM_FIXTURE_SCRIPT} ${SYM_FIXTURE_SRC} ${SYM_FIXTURE_DIR}
  DEPENDS ${SYM_FIXTURE_SRC}/sym_fixture.c ${SYM_FIXTURE_SRC}/sym_fixture_cpp.cc
          ${SYM_FIXTURE_SCRIPT}
  COMMENT "Building symbolizer fixture binaries"
  VERBATIM)
add_custom_target(sym_fixtures ALL DEPENDS ${SYM_FIXTURE_DIR}/stamp)

foreach(t test_elf test_symcache)
  if(TARGET ${t})
    add_dependencies(${t} sym_fixtures)
    target_compile_definitions(${t} PRIVATE SYM_FIXTURE_DIR="${SYM_FIXTURE_DIR}")
  endif()
endforeach()
