// SPDX-License-Identifier: Apache-2.0
/*
 * For cudart_ctypes.py (it.record_cuda): host functions standing in for kernels, loaded
 * by a Python program through ctypes, whose addresses it passes to cudaLaunchKernel. Their
 * symbols are kernels' mangled names, as a kernel's host function has.
 */
#define EXPORT __attribute__((visibility("default"), noinline))

static volatile int sink;

EXPORT void py_kernel_one(float *a, int n) __asm__("_Z13py_kernel_onePfi");
EXPORT void py_kernel_one(float *a, int n)
{
	sink += n + (a != 0);
}
