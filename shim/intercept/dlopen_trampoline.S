// The exported dlopen. glibc searches the calling object's RUNPATH and expands its $ORIGIN, finding
// the caller from the return address, so this entry point leaves that address in place: it hands
// the arguments and the return address to vramshim_dlopen_notice (C++), which answers glibc's
// dlopen, then jumps (not calls) there with the original arguments.
        .text
        .globl  dlopen
        .type   dlopen, @function
dlopen:
        .cfi_startproc
        pushq   %rdi
        .cfi_adjust_cfa_offset 8
        pushq   %rsi
        .cfi_adjust_cfa_offset 8
        subq    $8, %rsp                  // 16-byte aligned for the call
        .cfi_adjust_cfa_offset 8
        movq    24(%rsp), %rdx            // the caller's return address
        call    vramshim_dlopen_notice
        movq    %rax, %r11
        addq    $8, %rsp
        .cfi_adjust_cfa_offset -8
        popq    %rsi
        .cfi_adjust_cfa_offset -8
        popq    %rdi
        .cfi_adjust_cfa_offset -8
        testq   %r11, %r11
        jz      1f
        jmp     *%r11
1:
        xorl    %eax, %eax                // no C library dlopen found: fail as dlopen fails
        ret
        .cfi_endproc
        .size   dlopen, .-dlopen

        .section .note.GNU-stack,"",@progbits
