// Application code for the attribution tests, built as its own shared library so that the test
// binary (which holds the tracker and the hook stand-ins) plays the part of the shim's module.
#pragma once

#include <cstdint>

extern "C" {

// Stand-ins for the shim's hooks: the scenarios "allocate" and "free" through them.
struct ScenarioHooks {
  void (*allocate)(uint64_t key, uint64_t size);
  void (*release)(uint64_t key);
};

// Three 1 MiB allocations (keys first_key .. first_key + 2), never freed.
void leak_three_blocks(const ScenarioHooks* hooks, uint64_t first_key);

// 10,000 allocations of 4 KiB, each freed at once (key first_key reused).
void churn(const ScenarioHooks* hooks, uint64_t first_key);

// One 256 MiB allocation, freed before returning.
void peak_then_free(const ScenarioHooks* hooks, uint64_t key);

// Recurses `depth` frames deep through scenario_recurse, then calls at_bottom(argument).
void scenario_recurse(int depth, void (*at_bottom)(void* argument), void* argument);
}
