// vfork() for libtracetune_collector.so (x86-64): marks the calling thread, then jumps to the
// real vfork. No C wrapper can do this: vfork returns twice on one stack (the child first), so
// the hook must leave no frame of its own. The mark is a thread-local byte; a vfork child runs
// on its parent thread's TLS and memory, so it sees the mark too, and in_vfork_child()
// (writer.cpp) asks the kernel for the pid only while a thread is marked, instead of at every
// open and close (a getpid() costs ~140 ns on our VMs).
//
// tracetune_real_vfork is resolved by the library constructor; until then (or if it cannot
// be), tracetune_vfork_fallback() forks instead, which POSIX allows a vfork to do.
#if defined(__x86_64__)
        .text
        .globl  vfork
        .type   vfork, @function
vfork:
        .cfi_startproc
        endbr64
        movq    tracetune_vfork_pending@gottpoff(%rip), %rax
        movb    $1, %fs:(%rax)
        movq    tracetune_real_vfork(%rip), %rax
        testq   %rax, %rax
        jz      1f
        jmp     *%rax
1:      jmp     tracetune_vfork_fallback
        .cfi_endproc
        .size   vfork, .-vfork
#endif
        .section .note.GNU-stack,"",@progbits
