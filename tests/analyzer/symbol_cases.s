# Symbols whose choice by libdwfl depends on their order in the table (symbol_ranges_test): a weak
# symbol inside a global one listed after it, a local sized function holding a global label,
# aliases of one start and different sizes or bindings. (From an attack on SymbolRanges.)
  .text
  .globl a_small, a_big, w_inner, g_outer, g_label, z_wide, y_narrow
  .local l_fn
  .weak w_inner
  .type a_small,@function
  .type a_big,@function
# case A: same start, same binding, sizes 0x10 and 0x40
a_small:
a_big:
  .fill 0x80,1,0x90
  .size a_small, 0x10
  .size a_big, 0x40
# case B: weak w_inner listed before global g_outer, g_outer starts lower
  .org 0x100
g_outer_start:
  .fill 0x80,1,0x90
w_inner:
  .fill 0x100,1,0x90
  .set g_outer, g_outer_start
  .type w_inner,@function
  .type g_outer,@function
  .size w_inner, 0x100
  .size g_outer, 0x200
# case C: local sized l_fn with a global sizeless label inside
  .org 0x400
l_fn:
  .fill 0x20,1,0x90
g_label:
  .fill 0x20,1,0x90
  .type l_fn,@function
  .size l_fn, 0x40
# case E: same start, weak vs global
  .org 0x500
z_wide:
y_narrow:
  .fill 0x40,1,0x90
  .weak z_wide
  .size z_wide, 0x40
  .size y_narrow, 0x10
  .org 0x600
  ret
