// Streams the shim cannot see created. The pools' reuse rule needs to hear of every stream that is
// not ordered by the legacy stream, and the shim hooks every entry point of CUDA 13 that creates
// one (cuStreamCreate, cuStreamCreateWithPriority, cuGreenCtxStreamCreate). A door that hands out
// a stream-creating function the shim does not hook (a newer variant) reports it here; the runtime
// then makes every pool fence with a context synchronize, which holds without seeing the streams.
#pragma once

namespace vramshim::intercept {

// Whether `name` is an entry point that creates streams: cuStreamCreate… or
// cuGreenCtxStreamCreate….
bool creates_streams(const char* name);

// A door handed out `name`, a stream-creating function without a hook. Remembered for the process
// (the first name); tells the listener, if one is set, with the name.
void note_unhooked_stream_source(const char* name);
// The first such name, or nullptr when there was none.
const char* first_unhooked_stream_source();

using UnhookedStreamSourceListener = void (*)(const char* name);
void set_unhooked_stream_source_listener(UnhookedStreamSourceListener listener);

}  // namespace vramshim::intercept
