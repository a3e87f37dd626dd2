// The exported dlsym. glibc resolves dlsym(RTLD_NEXT, …) relative to the object that called it, found
// from the return address. So this entry point must leave the caller's return address in place: it asks
// vramshim_dlsym_answer (C++) what to do, giving it that return address, then either returns the hook
// it chose or jumps (not calls) to glibc's dlsym with the original arguments, as if the caller had
// called glibc directly.
        .text
        .globl  dlsym
        .type   dlsym, @function
dlsym:
        .cfi_startproc
        pushq   %rdi
        .cfi_adjust_cfa_offset 8
        pushq   %rsi
        .cfi_adjust_cfa_offset 8
        subq    $24, %rsp                 // 16-byte aligned for the call; 0(%rsp) receives the jump target
        .cfi_adjust_cfa_offset 24
        movq    $0, (%rsp)
        movq    %rsp, %rdx
        movq    40(%rsp), %rcx            // the caller's return address
        call    vramshim_dlsym_answer
        movq    (%rsp), %r11
        addq    $24, %rsp
        .cfi_adjust_cfa_offset -24
        popq    %rsi
        .cfi_adjust_cfa_offset -8
        popq    %rdi
        .cfi_adjust_cfa_offset -8
        testq   %r11, %r11
        jz      1f
        jmp     *%r11
1:
        ret
        .cfi_endproc
        .size   dlsym, .-dlsym

        .section .note.GNU-stack,"",@progbits
