// Room for one more element of a vector, made before the element exists (so that the push_back
// that follows cannot throw), growing the capacity geometrically: reserve(size() + 1) allocates
// exactly one more slot each time, which makes n insertions copy the vector n times.
#pragma once

#include <algorithm>
#include <cstddef>

namespace vramshim::support {

template <typename Vector>
void make_room_for_one_more(Vector& vector) {
  if (vector.size() < vector.capacity()) return;
  vector.reserve(std::max<size_t>(16, 2 * vector.capacity()));
}

}  // namespace vramshim::support
