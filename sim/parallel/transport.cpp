#include "sim/parallel/transport.h"

#include <algorithm>
#include <stdexcept>

namespace wafersim::sim::parallel {

void SingleProcess::send(unsigned /*to*/, const std::string& /*bytes*/) {
  throw std::logic_error("transport: one process has no other rank to send to");
}

std::string SingleProcess::receive(unsigned /*from*/) {
  throw std::logic_error("transport: one process has no other rank to receive from");
}

ItemRange rank_items(std::size_t items, unsigned ranks, unsigned rank) {
  if (ranks == 0 || rank >= ranks) throw std::logic_error("rank_items: rank out of range");
  const std::size_t base = items / ranks, extra = items % ranks;
  const std::size_t begin = rank * base + std::min<std::size_t>(rank, extra);
  return {begin, begin + base + (rank < extra ? 1 : 0)};
}

unsigned rank_of_item(std::size_t items, unsigned ranks, std::size_t i) {
  for (unsigned r = 0; r < ranks; ++r)
    if (rank_items(items, ranks, r).contains(i)) return r;
  throw std::logic_error("rank_of_item: item out of range");
}

}  // namespace wafersim::sim::parallel
