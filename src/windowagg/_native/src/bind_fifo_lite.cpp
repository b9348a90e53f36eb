// _core.TwoStacksLite and _core.DABALite (bind_fifo.cpp has DABA and AMTA): the FIFO family
// in two files of similar cost, so that two cores compile them side by side.
#include <nanobind/nanobind.h>

#include "adapters.hpp"
#include "fifo_bind.hpp"
#include "windowagg/daba_lite.hpp"
#include "windowagg/two_stacks_lite.hpp"

namespace nb = nanobind;
using namespace windowagg::py;

void bind_fifo_lite(nb::module_& m) {
    bind_fifo_class<windowagg::TwoStacksLite>(m, "TwoStacksLite");
    bind_fifo_class<windowagg::DABALite>(m, "DABALite");
}
