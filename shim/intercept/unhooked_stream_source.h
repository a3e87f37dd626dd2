// Streams the shim cannot see created. The pools' reuse rule needs to hear of every stream that is
// not ordered by the legacy stream, and the shim hooks every entry point of CUDA 13 that creates
// one (cuStreamCreate, cuStreamCreateWithPriority, cuGreenCtxStreamCreate). A door that hands out
// a stream-creating function the shim does not hook (a newer variant), or a library whose driver
// calls bypass the hooks (dlopen'ed with RTLD_DEEPBIND), reports it here; the runtime then makes
// every pool fence with a context synchronize, which holds without seeing the streams.
#pragma once

#include <cstddef>

namespace vramshim::intercept {

// Whether `name` is an entry point that creates streams: cuStreamCreate… or
// cuGreenCtxStreamCreate….
bool creates_streams(const char* name);

// The longest description kept, with its terminating zero.
constexpr size_t kUnhookedStreamSourceMax = 256;

// A door handed out `name`, a stream-creating function without a hook.
void note_unhooked_stream_source(const char* name);
// A door described by a whole clause (what the program did and what the shim cannot see).
void note_unseen_streams(const char* description);
// The first description, or nullptr when there was none.
const char* first_unhooked_stream_source();

using UnhookedStreamSourceListener = void (*)(const char* description);
void set_unhooked_stream_source_listener(UnhookedStreamSourceListener listener);

}  // namespace vramshim::intercept
