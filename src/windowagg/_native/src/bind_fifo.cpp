// _core.DABA and _core.AMTA (in memory; TwoStacksLite and DABALite are in bind_fifo_lite.cpp,
// so that two cores compile the family side by side): the native twins of windowagg.fifo's
// classes. Same verbs, errors and partials as the Python reference; the facade
// (windowagg/_native/fifo.py) checks the monoid and registers them.
#include <nanobind/nanobind.h>

#include <string>

#include "adapters.hpp"
#include "fifo_bind.hpp"
#include "windowagg/amta.hpp"
#include "windowagg/daba.hpp"

namespace nb = nanobind;
using namespace windowagg::py;

void bind_fifo(nb::module_& m) {
    bind_fifo_class<windowagg::DABA>(m, "DABA");
    bind_fifo_class<windowagg::AMTA, true>(m, "AMTA");
}
