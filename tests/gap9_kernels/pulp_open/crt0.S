/* Bare-metal start for the pulp-open kernel check (see xp_check.c): every core enters here;
 * the fabric controller (cluster id 31) runs fc_main on an L2 stack, the 8 cluster cores run
 * cl_main(core) on 1 KiB stacks at the top of L1 (the kernels' stack traffic stays in
 * L1, as under the real runtime). */
    .section .text.start
    .globl _start
_start:
    .option push
    .option norelax
    la gp, __global_pointer$
    .option pop
    csrr a0, mhartid
    andi a1, a0, 0x1f
    srli a2, a0, 5
    li t0, 31
    beq a2, t0, 1f
    li sp, 0x10010000
    slli t1, a1, 10
    sub sp, sp, t1
    mv a0, a1
    call cl_main
2:  wfi
    j 2b
1:  la sp, fc_stack_top
    call fc_main
3:  j 3b
