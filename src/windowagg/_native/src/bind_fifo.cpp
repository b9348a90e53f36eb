// _core.TwoStacksLite, _core.DABALite, _core.DABA and _core.AMTA (in memory): the
// native twins of windowagg.fifo's classes. Same verbs, errors and partials as the Python
// reference; the facade (windowagg/_native/fifo.py) checks the monoid and registers them.
#include <nanobind/nanobind.h>

#include <string>

#include "adapters.hpp"
#include "fifo_bind.hpp"
#include "windowagg/amta.hpp"
#include "windowagg/daba.hpp"
#include "windowagg/daba_lite.hpp"
#include "windowagg/two_stacks_lite.hpp"

namespace nb = nanobind;
using namespace windowagg::py;

void bind_fifo(nb::module_& m) {
    bind_fifo_class<windowagg::TwoStacksLite>(m, "TwoStacksLite");
    bind_fifo_class<windowagg::DABALite>(m, "DABALite");
    bind_fifo_class<windowagg::DABA>(m, "DABA");
    bind_fifo_class<windowagg::AMTA, true>(m, "AMTA");
}
