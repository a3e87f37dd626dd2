// Calls leaf_alloc(N) from `Count` distinct call sites, caller<N>() for N = 0 .. Count-1: as many
// stacks, which differ only below leaf_alloc. The program defines leaf_alloc.
#pragma once

#include <utility>

__attribute__((noinline)) void leaf_alloc(int caller);

template <int N>
__attribute__((noinline)) void caller() {
  leaf_alloc(N);
  asm volatile("");  // the call stays a call: no tail call
}

template <int... N>
void call_each(std::integer_sequence<int, N...>) {
  (caller<N>(), ...);
}

template <int Count>
void call_from_distinct_callers() {
  call_each(std::make_integer_sequence<int, Count>());
}
