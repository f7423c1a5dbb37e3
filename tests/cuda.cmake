# SPDX-License-Identifier: Apache-2.0
# CUDA/NCCL probes (it.record_cuda): workloads that call the real CUDA runtime (no GPU
# needed: calls fail without a driver after mlprof's entry uprobes fired), test doubles of
# the driver (libcuda.so.1) and NCCL (libnccl.so.2), and hostile libraries. Everything is
# built like production ML binaries (-O2, no frame pointers) into tests/cuda/ of the build
# tree.
#
# The CUDA toolchain comes from PyPI (scripts/cuda-toolchain.sh): a venv at
# ~/.cache/mlprof/cuda-venv, or MLPROF_CUDA_HOME (environment or cache variable: that venv,
# or a CUDA 13 toolkit root with bin/nvcc). Without it the nvcc-built workloads are not
# built and their cases are skipped, saying why; the test doubles need only a C compiler.
set(CUDA_TEST_DIR ${CMAKE_CURRENT_BINARY_DIR}/cuda)
set(CUDA_TEST_SRC ${CMAKE_CURRENT_SOURCE_DIR}/cuda)
set(CUDA_TEST_CFLAGS ${MLPROF_WARNINGS} -O2 -g0 -fomit-frame-pointer
  -fno-inline-functions-called-once -fno-sanitize=all)

function(cuda_test_target name out_dir)
  target_compile_options(${name} PRIVATE ${CUDA_TEST_CFLAGS})
  target_compile_definitions(${name} PRIVATE _GNU_SOURCE)
  target_link_options(${name} PRIVATE -fno-sanitize=all)
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${out_dir}
    LIBRARY_OUTPUT_DIRECTORY ${out_dir} C_VISIBILITY_PRESET hidden)
endfunction()

# --- test doubles (plain C: always built) ---
# libcuda.so.1: the driver API test double (see fake_libcuda.c), alone in its directory.
add_library(cuda_fake_driver SHARED ${CUDA_TEST_SRC}/fake_libcuda.c)
cuda_test_target(cuda_fake_driver ${CUDA_TEST_DIR}/fakedrv)
set_target_properties(cuda_fake_driver PROPERTIES OUTPUT_NAME cuda SUFFIX .so.1)
# libnccl.so.2: the NCCL test double (see fake_libnccl.c).
add_library(cuda_fake_nccl SHARED ${CUDA_TEST_SRC}/fake_libnccl.c)
cuda_test_target(cuda_fake_nccl ${CUDA_TEST_DIR}/fakenccl)
set_target_properties(cuda_fake_nccl PROPERTIES OUTPUT_NAME nccl SUFFIX .so.2)
# libcudart.so.13 that is no CUDA runtime, twice (the second also exports a data object
# named cudaMalloc).
add_library(cuda_not_cudart SHARED ${CUDA_TEST_SRC}/not_cudart.c)
cuda_test_target(cuda_not_cudart ${CUDA_TEST_DIR}/notcudart)
set_target_properties(cuda_not_cudart PROPERTIES OUTPUT_NAME cudart SUFFIX .so.13)
add_library(cuda_not_cudart_data SHARED ${CUDA_TEST_SRC}/not_cudart.c)
cuda_test_target(cuda_not_cudart_data ${CUDA_TEST_DIR}/notcudart_data)
target_compile_definitions(cuda_not_cudart_data PRIVATE NOT_CUDART_DATA)
set_target_properties(cuda_not_cudart_data PROPERTIES OUTPUT_NAME cudart SUFFIX .so.13)
# A CUDA runtime launching through the driver test double (see fake_rt_over_drv.c).
add_library(cuda_fake_rt_over_drv SHARED ${CUDA_TEST_SRC}/fake_rt_over_drv.c)
cuda_test_target(cuda_fake_rt_over_drv ${CUDA_TEST_DIR}/fakert)
target_link_libraries(cuda_fake_rt_over_drv PRIVATE ${CMAKE_DL_LIBS})
set_target_properties(cuda_fake_rt_over_drv PROPERTIES OUTPUT_NAME fakert)
# Host functions standing in for kernels, for the ctypes workload.
add_library(cuda_pykern SHARED ${CUDA_TEST_SRC}/pykern.c)
cuda_test_target(cuda_pykern ${CUDA_TEST_DIR})
set_target_properties(cuda_pykern PROPERTIES OUTPUT_NAME pykern)

add_executable(drv_triton ${CUDA_TEST_SRC}/drv_triton.c)
cuda_test_target(drv_triton ${CUDA_TEST_DIR})
target_link_libraries(drv_triton PRIVATE ${CMAKE_DL_LIBS})
# PyTorch's caching-allocator probes (USDT) on no GPU (see torch_alloc.c).
add_executable(torch_alloc ${CUDA_TEST_SRC}/torch_alloc.c)
cuda_test_target(torch_alloc ${CUDA_TEST_DIR})
if(TARGET test_usdt)
  add_dependencies(test_usdt torch_alloc) # its notes are unit.usdt's fixture
endif()
# PyTorch's autograd engine running a backward pass on a worker thread (autograd_engine.c).
add_executable(autograd_engine ${CUDA_TEST_SRC}/autograd_engine.c)
cuda_test_target(autograd_engine ${CUDA_TEST_DIR})
target_link_libraries(autograd_engine PRIVATE pthread)
add_executable(nccl_train ${CUDA_TEST_SRC}/nccl_train.c)
cuda_test_target(nccl_train ${CUDA_TEST_DIR})
target_link_libraries(nccl_train PRIVATE cuda_fake_nccl)
add_executable(dlopen_call ${CUDA_TEST_SRC}/dlopen_call.c)
cuda_test_target(dlopen_call ${CUDA_TEST_DIR})
target_link_libraries(dlopen_call PRIVATE ${CMAKE_DL_LIBS})

# --- the CUDA 13 toolchain (nvcc, libcudart.so.13) ---
if(NOT DEFINED MLPROF_CUDA_HOME)
  if(DEFINED ENV{MLPROF_CUDA_HOME})
    set(MLPROF_CUDA_HOME "$ENV{MLPROF_CUDA_HOME}")
  else()
    set(MLPROF_CUDA_HOME "$ENV{HOME}/.cache/mlprof/cuda-venv")
  endif()
endif()
file(GLOB _cuda_nvcc ${MLPROF_CUDA_HOME}/bin/nvcc
  ${MLPROF_CUDA_HOME}/lib/python3*/site-packages/nvidia/cu13/bin/nvcc)
set(CUDA13_NVCC "")
set(CUDA13_LIB "")
set(CUDA_SKIP_NVCC "")
if(_cuda_nvcc)
  list(GET _cuda_nvcc 0 CUDA13_NVCC)
  get_filename_component(_cuda_root ${CUDA13_NVCC} DIRECTORY)
  get_filename_component(_cuda_root ${_cuda_root} DIRECTORY)
  foreach(_d lib lib64 targets/x86_64-linux/lib)
    if(NOT CUDA13_LIB AND EXISTS ${_cuda_root}/${_d}/libcudart.so.13)
      set(CUDA13_LIB ${_cuda_root}/${_d}/libcudart.so.13)
    endif()
  endforeach()
endif()
find_program(MLPROF_CUDA_HOSTCXX NAMES g++ c++)
if(NOT CUDA13_NVCC)
  set(CUDA_SKIP_NVCC "no CUDA 13 nvcc under MLPROF_CUDA_HOME=${MLPROF_CUDA_HOME} (run scripts/cuda-toolchain.sh)")
elseif(NOT CUDA13_LIB)
  set(CUDA_SKIP_NVCC "no libcudart.so.13 next to ${CUDA13_NVCC}")
elseif(NOT MLPROF_CUDA_HOSTCXX)
  set(CUDA_SKIP_NVCC "nvcc needs a host C++ compiler (g++)")
else()
  # Can this nvcc build with this host compiler? Asked once per nvcc (cached).
  if(NOT "${MLPROF_CUDA_NVCC_OK}" STREQUAL "${CUDA13_NVCC}")
    set(_probe ${CMAKE_CURRENT_BINARY_DIR}/cuda_nvcc_probe)
    file(MAKE_DIRECTORY ${_probe})
    file(WRITE ${_probe}/probe.cu "__global__ void k(int *p) { *p = 1; }\nint main() { k<<<1, 1>>>(0); return 0; }\n")
    execute_process(COMMAND ${CUDA13_NVCC} -ccbin ${MLPROF_CUDA_HOSTCXX} -O2 -o ${_probe}/probe
      ${_probe}/probe.cu RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
    if(_rc EQUAL 0)
      set(MLPROF_CUDA_NVCC_OK ${CUDA13_NVCC} CACHE INTERNAL "nvcc that built a probe program")
    else()
      string(REGEX REPLACE "\n.*" "" _out "${_out}")
      string(REPLACE ";" "," _out "${_out}")
      set(CUDA_SKIP_NVCC "${CUDA13_NVCC} cannot build with ${MLPROF_CUDA_HOSTCXX}: ${_out}")
    endif()
  endif()
endif()

if(NOT CUDA_SKIP_NVCC)
  # nvcc links -lcudart from a directory with a libcudart.so link; the runtime is found by
  # RUNPATH at run time.
  get_filename_component(_cu13_libdir ${CUDA13_LIB} DIRECTORY)
  file(MAKE_DIRECTORY ${CUDA_TEST_DIR}/cu13link)
  file(CREATE_LINK ${CUDA13_LIB} ${CUDA_TEST_DIR}/cu13link/libcudart.so SYMBOLIC)
  set(_nvcc_flags -ccbin ${MLPROF_CUDA_HOSTCXX} -O2
    -Xcompiler=-fomit-frame-pointer,-fno-inline-functions-called-once)
  add_custom_command(OUTPUT ${CUDA_TEST_DIR}/cuda_launch_shared
    COMMAND ${CUDA13_NVCC} ${_nvcc_flags} -cudart shared -L${CUDA_TEST_DIR}/cu13link
      -Xlinker -rpath -Xlinker ${_cu13_libdir} -o ${CUDA_TEST_DIR}/cuda_launch_shared
      ${CUDA_TEST_SRC}/cuda_launch.cu
    DEPENDS ${CUDA_TEST_SRC}/cuda_launch.cu VERBATIM
    COMMENT "nvcc: cuda_launch_shared (cudart shared)")
  # cudart static (nvcc's default): the runtime's symbols only in .symtab.
  add_custom_command(OUTPUT ${CUDA_TEST_DIR}/cuda_launch_static
    COMMAND ${CUDA13_NVCC} ${_nvcc_flags} -cudart static -o ${CUDA_TEST_DIR}/cuda_launch_static
      ${CUDA_TEST_SRC}/cuda_launch.cu
    DEPENDS ${CUDA_TEST_SRC}/cuda_launch.cu VERBATIM
    COMMENT "nvcc: cuda_launch_static (cudart static)")
  add_custom_target(cuda_nvcc_workloads ALL DEPENDS ${CUDA_TEST_DIR}/cuda_launch_shared
    ${CUDA_TEST_DIR}/cuda_launch_static)
else()
  message(STATUS "it.record_cuda: CUDA 13 workloads not built: ${CUDA_SKIP_NVCC}")
endif()

# --- CUDA 12 runtime (nvidia-cuda-runtime-cu12 wheel) for cu12_launch.c ---
set(CUDA12_LIB "")
set(CUDA_SKIP_CU12 "")
set(_cu12_rel nvidia/cuda_runtime/lib/libcudart.so.12)
if(EXISTS ${MLPROF_CUDA_HOME}/cu12/${_cu12_rel})
  set(CUDA12_LIB ${MLPROF_CUDA_HOME}/cu12/${_cu12_rel})
else()
  # the wheel alone (downloaded, not unpacked): unpack the runtime into the build tree
  file(GLOB _cu12_whl $ENV{HOME}/.cache/mlprof/cu12/nvidia_cuda_runtime_cu12-*.whl)
  if(_cu12_whl)
    list(GET _cu12_whl 0 _cu12_whl)
    if(NOT EXISTS ${CUDA_TEST_DIR}/cu12/${_cu12_rel})
      file(ARCHIVE_EXTRACT INPUT ${_cu12_whl} DESTINATION ${CUDA_TEST_DIR}/cu12
        PATTERNS "nvidia/cuda_runtime/lib/*")
    endif()
    if(EXISTS ${CUDA_TEST_DIR}/cu12/${_cu12_rel})
      set(CUDA12_LIB ${CUDA_TEST_DIR}/cu12/${_cu12_rel})
    endif()
  endif()
endif()
if(CUDA12_LIB)
  get_filename_component(_cu12_libdir ${CUDA12_LIB} DIRECTORY)
  add_executable(cu12_launch ${CUDA_TEST_SRC}/cu12_launch.c)
  cuda_test_target(cu12_launch ${CUDA_TEST_DIR})
  target_link_libraries(cu12_launch PRIVATE ${CUDA12_LIB})
  set_target_properties(cu12_launch PROPERTIES BUILD_RPATH ${_cu12_libdir})
else()
  set(CUDA_SKIP_CU12 "no CUDA 12 runtime (nvidia-cuda-runtime-cu12) under ${MLPROF_CUDA_HOME}/cu12 or ~/.cache/mlprof/cu12 (run scripts/cuda-toolchain.sh)")
  message(STATUS "it.record_cuda: CUDA 12 workload not built: ${CUDA_SKIP_CU12}")
endif()

# --- the test ---
find_program(MLPROF_CUDA_PYTHON3 NAMES python3 REQUIRED)
add_test(NAME it.record_cuda COMMAND ${MLPROF_CUDA_PYTHON3}
  ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_record_cuda.py)
set_tests_properties(it.record_cuda PROPERTIES LABELS "integration;root" TIMEOUT 300
  RUN_SERIAL TRUE SKIP_RETURN_CODE 77 ENVIRONMENT
  "MLPROF=$<TARGET_FILE:mlprof>;TEST_SRC_DIR=${CMAKE_CURRENT_SOURCE_DIR};TEST_TMP=${CMAKE_CURRENT_BINARY_DIR}/tmp;CUDA_TEST_DIR=${CUDA_TEST_DIR};CUDA13_LIB=${CUDA13_LIB};CUDA12_LIB=${CUDA12_LIB};CUDA_SKIP_NVCC=${CUDA_SKIP_NVCC};CUDA_SKIP_CU12=${CUDA_SKIP_CU12}")

# The same checks of the driver, its late attach and short-lived processes through one
# uprobe link per probe: the path of kernels older than 6.6 (no uprobe_multi links). Not
# Nccl: its program waits 300 ms for the probes, and attaching 31 of them one link at a
# time took longer than that on a loaded 2-vCPU machine (152 of 200 calls seen).
add_test(NAME it.record_cuda_per_probe COMMAND ${MLPROF_CUDA_PYTHON3}
  ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_record_cuda.py Driver DriverAttach
  ShortLived)
set_tests_properties(it.record_cuda_per_probe PROPERTIES LABELS "integration;root"
  TIMEOUT 300 RUN_SERIAL TRUE SKIP_RETURN_CODE 77 ENVIRONMENT
  "MLPROF_TEST_NO_UPROBE_MULTI=1;MLPROF=$<TARGET_FILE:mlprof>;TEST_SRC_DIR=${CMAKE_CURRENT_SOURCE_DIR};TEST_TMP=${CMAKE_CURRENT_BINARY_DIR}/tmp;CUDA_TEST_DIR=${CUDA_TEST_DIR};CUDA13_LIB=${CUDA13_LIB};CUDA12_LIB=${CUDA12_LIB};CUDA_SKIP_NVCC=${CUDA_SKIP_NVCC};CUDA_SKIP_CU12=${CUDA_SKIP_CU12}")

# --- mlprof agent: CUDA and memory-growth profiles pushed to a real Pyroscope ---
# it.agent_gpu_memory (here for the CUDA variables above): cuda_launch_shared and
# tests/workloads/mem_workload (memory.cmake) under `mlprof agent --pid`, queried back from
# Pyroscope (scripts/pyroscope.sh). Exit 77 = skipped: not root, no Pyroscope binary; the
# CUDA case alone is skipped, saying why, without the CUDA toolchain.
add_test(NAME it.agent_gpu_memory COMMAND ${MLPROF_CUDA_PYTHON3}
  ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_agent_gpu_memory.py)
set_tests_properties(it.agent_gpu_memory PROPERTIES LABELS "integration;root;pyroscope"
  TIMEOUT 300 RUN_SERIAL TRUE SKIP_RETURN_CODE 77 ENVIRONMENT
  "MLPROF=$<TARGET_FILE:mlprof>;WL_DIR=${CMAKE_CURRENT_BINARY_DIR}/workloads;TEST_SRC_DIR=${CMAKE_CURRENT_SOURCE_DIR};TEST_TMP=${CMAKE_CURRENT_BINARY_DIR}/tmp;PYROSCOPE_SH=${CMAKE_SOURCE_DIR}/scripts/pyroscope.sh;CUDA_TEST_DIR=${CUDA_TEST_DIR};CUDA13_LIB=${CUDA13_LIB};CUDA12_LIB=${CUDA12_LIB};CUDA_SKIP_NVCC=${CUDA_SKIP_NVCC};CUDA_SKIP_CU12=${CUDA_SKIP_CU12}")
