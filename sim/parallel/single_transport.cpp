// process_transport() of a build without MPI: always one process. Started by an MPI launcher
// as one of several ranks, every rank would run the whole cluster into the same folder: an
// input error instead.
#include <cstdlib>
#include <string>

#include "sim/errors.h"
#include "sim/parallel/transport.h"

namespace wafersim::sim::parallel {

std::unique_ptr<Transport> process_transport() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
    if (const char* n = std::getenv(v); n != nullptr && std::atoi(n) > 1)
      throw InputError(std::string("started as one of ") + n +
                       " MPI ranks, but this wafersim was built without MPI (WAFERSIM_MPI=OFF): run it as "
                       "one process, or build with Open MPI installed");
  return std::make_unique<SingleProcess>();
}

}  // namespace wafersim::sim::parallel
