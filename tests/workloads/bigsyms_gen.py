#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the assembly of libbigsyms.so, a library shaped like PyTorch's libtorch_cpu.so for
it.record_bigsyms: hundreds of thousands of exported functions with long mangled C++ names
(a .strtab and a .dynstr of 60+ MB each), every one with CFI (.eh_frame, and .eh_frame_hdr
from the linker), and one hot chain placed in the middle of the address range:

    big_entry                                   (plain exported name, called by bigsyms_main)
      -> torch::native::(anonymous namespace)::BigsymsHotKernelImpl<float, 8>::forward_mid(long)
        -> torch::native::cpu::BigsymsLeafKernel<double, 4>::burn_leaf(long, double const*)

The three hot functions keep live values in %rbp (no frame pointer anywhere), so only CFI
unwinding walks them. The names are valid Itanium manglings (no repeated component, so no
substitutions are needed) and demangle with c++filt / __cxa_demangle.

usage: bigsyms_gen.py OUT_DIR [--functions N] [--parts K]
Writes OUT_DIR/bigsyms_0.s .. bigsyms_{K-1}.s (assembled separately, in parallel by the build;
in address order once linked in that order). Standard library only; the output is
deterministic.
"""
import argparse
import os
import sys

# The hot chain (test_record_bigsyms.py expects these names demangled).
HOT_ENTRY = "big_entry"
HOT_MID = "_ZN5torch6native12_GLOBAL__N_120BigsymsHotKernelImplIfLi8EE11forward_midEl"
HOT_LEAF = "_ZN5torch6native3cpu17BigsymsLeafKernelIdLi4EE9burn_leafElPKd"

# Pieces of the filler names: (mangled, demangled). Each name is
# _ZN 5torch 6native <ns> <class><targs> <inner> <method> E <params>, a member function of a
# class nested in a class template; no component repeats inside one name, so no
# substitutions (S_, S0_...) are due.
NAMESPACES = [("12_GLOBAL__N_1", "(anonymous namespace)"), ("3cpu", "cpu"),
              ("6detail", "detail"), ("3vec", "vec"), ("8internal", "internal"),
              ("4impl", "impl"), ("11_functional", "_functional")]
CLASSES = ["VectorizedLoop2d", "BinaryOpScalarKernel", "ReduceKernelImpl",
           "UpsampleBilinear2dKernel", "IndexPutAccumulateKernel", "GroupNormKernelImplInternal",
           "SoftmaxLastDimKernel", "ConvolutionDepthwise3x3Winograd", "QuantizedLinearPrepack",
           "AdaptiveAvgPool3dBackward"]
TARGS = [("IfLi4EE", "<float, 4>"), ("IdLi8EE", "<double, 8>"), ("IaLb1EE", "<signed char, true>"),
         ("IhLi16EE", "<unsigned char, 16>"), ("IlLj2EE", "<long, 2u>"),
         ("IsLi32EE", "<short, 32>")]
INNER = ["VectorizedInnerLoop", "ReductionAccumulator", "ContiguousFastPath", "StridedLoopBody",
         "BroadcastingKernelFunctor", "ChannelsLastBlockedImpl"]
METHODS = ["add_out_kernel", "mul_kernel_vectorized", "addcmul_cpu_impl", "sigmoid_backward",
           "layer_norm_forward", "embedding_bag_sum", "index_select_out_cpu",
           "scatter_reduce_two_impl", "batch_norm_collect_stats"]
PARAMS = [("RKN2at6TensorERKN3c106ScalarEl", "at::Tensor const&, c10::Scalar const&, long"),
          ("PfPKfll", "float*, float const*, long, long"),
          ("RN2at14TensorIteratorEi", "at::TensorIterator&, int"),
          ("N3c108ArrayRefIlEEbd", "c10::ArrayRef<long>, bool, double")]


def src(name):
    """An Itanium <source-name>: length then identifier."""
    return "%d%s" % (len(name), name)


def filler_name(i):
    """The i-th filler function: (mangled, demangled), distinct for every i."""
    ns_m, ns_d = NAMESPACES[i % len(NAMESPACES)]
    cls = CLASSES[(i // 7) % len(CLASSES)]
    ta_m, ta_d = TARGS[(i // 3) % len(TARGS)]
    inner = INNER[(i // 13) % len(INNER)]
    meth = "%s_%06d" % (METHODS[(i // 11) % len(METHODS)], i)
    pa_m, pa_d = PARAMS[(i // 5) % len(PARAMS)]
    mangled = "_ZN5torch6native%s%s%s%s%sE%s" % (ns_m, src(cls), ta_m, src(inner), src(meth),
                                                 pa_m)
    demangled = "torch::native::%s::%s%s::%s::%s(%s)" % (ns_d, cls, ta_d, inner, meth, pa_d)
    return mangled, demangled


# Filler bodies as macros: one line per function keeps the assembly at ~68 MB (expanded it
# would be ~400 MB). Every function is 16-byte aligned with an FDE; the second shape saves a
# register, so its FDE has CFA rules.
PRELUDE = """\
	.text
	.macro F0 s
	.p2align 4
	.globl \\s
	.type \\s, @function
\\s:
	.cfi_startproc
	leaq 1(%rdi), %rax
	ret
	.cfi_endproc
	.size \\s, .-\\s
	.endm
	.macro F1 s
	.p2align 4
	.globl \\s
	.type \\s, @function
\\s:
	.cfi_startproc
	pushq %rbx
	.cfi_def_cfa_offset 16
	.cfi_offset %rbx, -16
	movq %rdi, %rbx
	leaq (%rbx,%rbx,2), %rax
	popq %rbx
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size \\s, .-\\s
	.endm
"""

# The hot chain. %rbp holds data (never a frame pointer: a frame-pointer walk gets garbage);
# the CFI matches every push and stack adjustment. The callees are protected (bound inside
# the library), so the linker turns the calls into direct calls: no PLT stub in the chain.
ENTRY_ASM = """\
	.p2align 4
	.globl {name}
	.type {name}, @function
{name}:
	.cfi_startproc
	pushq %rbp
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	subq $16, %rsp
	.cfi_def_cfa_offset 32
	leaq 7(%rdi,%rdi,2), %rbp
	movq %rbp, 8(%rsp)
	call {mid}
	addq %rbp, %rax
	xorq 8(%rsp), %rax
	addq $16, %rsp
	.cfi_def_cfa_offset 16
	popq %rbp
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size {name}, .-{name}
"""

MID_ASM = """\
	.p2align 4
	.globl {name}
	.protected {name}
	.type {name}, @function
{name}:
	.cfi_startproc
	pushq %rbp
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	pushq %rbx
	.cfi_def_cfa_offset 24
	.cfi_offset %rbx, -24
	subq $24, %rsp
	.cfi_def_cfa_offset 48
	movq %rdi, %rbx
	imulq $0x2545f491, %rdi, %rbp
	movq %rbp, 8(%rsp)
	leaq 16(%rsp), %rsi
	call {leaf}
	leaq (%rax,%rax,2), %rax
	addq %rbp, %rax
	addq 8(%rsp), %rax
	addq %rbx, %rax
	addq $24, %rsp
	.cfi_def_cfa_offset 24
	popq %rbx
	.cfi_def_cfa_offset 16
	popq %rbp
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size {name}, .-{name}
"""

# burn_leaf(n, out): n rounds of xorshift64 with stack traffic, the result stored to *out.
LEAF_ASM = """\
	.p2align 4
	.globl {name}
	.protected {name}
	.type {name}, @function
{name}:
	.cfi_startproc
	pushq %r12
	.cfi_def_cfa_offset 16
	.cfi_offset %r12, -16
	pushq %rbx
	.cfi_def_cfa_offset 24
	.cfi_offset %rbx, -24
	subq $40, %rsp
	.cfi_def_cfa_offset 64
	movq %rdi, %rbx
	movabsq $0x9e3779b97f4a7c15, %rax
	imulq %rdi, %rax
	addq $1, %rax
	xorl %ecx, %ecx
	testq %rbx, %rbx
	je 2f
1:
	movq %rax, %r12
	shlq $13, %r12
	xorq %r12, %rax
	movq %rax, %r12
	shrq $7, %r12
	xorq %r12, %rax
	movq %rax, %r12
	shlq $17, %r12
	xorq %r12, %rax
	movq %rax, 8(%rsp)
	addq $1, %rcx
	cmpq %rcx, %rbx
	jne 1b
2:
	movq %rax, (%rsi)
	addq $40, %rsp
	.cfi_def_cfa_offset 24
	popq %rbx
	.cfi_def_cfa_offset 16
	popq %r12
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size {name}, .-{name}
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--functions", type=int, default=520000,
                    help="filler functions (default 520000)")
    ap.add_argument("--parts", type=int, default=4, help="assembly files (default 4)")
    a = ap.parse_args()
    if a.functions < 1000 or a.parts < 1:
        ap.error("need at least 1000 functions and 1 part")
    os.makedirs(a.out_dir, exist_ok=True)
    n = a.functions
    # The hot functions sit in the middle of the address range, far enough apart that each
    # is found by its own binary search: at 40%, 50% and 60% of the functions.
    bounds = [n * p // a.parts for p in range(a.parts + 1)]
    at = {n * 2 // 5: ENTRY_ASM.format(name=HOT_ENTRY, mid=HOT_MID),
          n // 2: MID_ASM.format(name=HOT_MID, leaf=HOT_LEAF),
          n * 3 // 5: LEAF_ASM.format(name=HOT_LEAF)}
    for p in range(a.parts):
        path = os.path.join(a.out_dir, "bigsyms_%d.s" % p)
        with open(path + ".tmp", "w") as f:
            f.write("# generated by bigsyms_gen.py: part %d of %d\n" % (p, a.parts))
            f.write(PRELUDE)
            lines = []
            for i in range(bounds[p], bounds[p + 1]):
                if i in at:
                    lines.append(at[i])
                lines.append("\tF%d %s\n" % (i % 3 == 0, filler_name(i)[0]))
            f.write("".join(lines))
            f.write('\t.section .note.GNU-stack,"",@progbits\n')
        os.replace(path + ".tmp", path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
