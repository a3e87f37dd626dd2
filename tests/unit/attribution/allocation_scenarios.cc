#include "tests/unit/attribution/allocation_scenarios.h"

// Built with -fno-optimize-sibling-calls: a tail call would drop the scenario's own frame.
extern "C" {

__attribute__((noinline)) void leak_three_blocks(const ScenarioHooks* hooks, uint64_t first_key) {
  for (uint64_t i = 0; i < 3; ++i) hooks->allocate(first_key + i, 1 << 20);
}

__attribute__((noinline)) void churn(const ScenarioHooks* hooks, uint64_t first_key) {
  for (int i = 0; i < 10000; ++i) {
    hooks->allocate(first_key, 4096);
    hooks->release(first_key);
  }
}

__attribute__((noinline)) void peak_then_free(const ScenarioHooks* hooks, uint64_t key) {
  hooks->allocate(key, uint64_t{256} << 20);
  hooks->release(key);
}

__attribute__((noinline)) void scenario_recurse(int depth, void (*at_bottom)(void*),
                                                void* argument) {
  if (depth <= 1) {
    at_bottom(argument);
  } else {
    scenario_recurse(depth - 1, at_bottom, argument);
  }
  // Keeps each level's frame alive across the call.
  asm volatile("" ::: "memory");
}
}
