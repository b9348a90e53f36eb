// windowagg._native._core: the compiled core's Python module. Each bind_*.cpp registers
// one family of classes; this file only assembles them.
#include <nanobind/nanobind.h>

namespace nb = nanobind;

void bind_fifo_lite(nb::module_& m);         // bind_fifo_lite.cpp
void bind_fifo(nb::module_& m);              // bind_fifo.cpp
void bind_order_statistics(nb::module_& m);  // bind_order_statistics.cpp
void bind_fiba(nb::module_& m);              // bind_fiba.cpp
void bind_decay(nb::module_& m);             // bind_decay.cpp
void bind_wavelet(nb::module_& m);           // bind_wavelet.cpp
void bind_decayed_rank(nb::module_& m);      // bind_decayed_rank.cpp
void bind_qdigest(nb::module_& m);           // bind_qdigest.cpp
void bind_space_saving(nb::module_& m);      // bind_space_saving.cpp
void bind_sliding_window(nb::module_& m);    // bind_sliding_window.cpp
void bind_codec(nb::module_& m);             // bind_codec.cpp

NB_MODULE(_core, m) {
    m.doc() = "windowagg's compiled core: FiBA, the FIFO family, AMTA, order statistics, the q-digest, Space-Saving and the sliding-window count";
#ifdef NDEBUG
    m.attr("debug_build") = false;
#else
    m.attr("debug_build") = true;
#endif
#if defined(__SANITIZE_ADDRESS__)
    m.attr("sanitized") = true;
#else
    m.attr("sanitized") = false;
#endif
    bind_fifo_lite(m);
    bind_fifo(m);
    bind_order_statistics(m);
    bind_fiba(m);
    bind_decay(m);
    bind_wavelet(m);
    bind_decayed_rank(m);
    bind_qdigest(m);
    bind_space_saving(m);
    bind_sliding_window(m);
    bind_codec(m);
}
