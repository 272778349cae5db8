// process_transport() of a build without MPI: always one process.
#include "sim/parallel/transport.h"

namespace wafersim::sim::parallel {

std::unique_ptr<Transport> process_transport() { return std::make_unique<SingleProcess>(); }

}  // namespace wafersim::sim::parallel
