// _core.decay_slices: the compiled twin of windowagg.sketches.forward_decay's slide of the
// exponential forward-decay monoid over the engine's windows (include/windowagg/forward_decay.hpp).
#include <nanobind/nanobind.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "inputs.hpp"
#include "py_errors.hpp"
#include "windowagg/forward_decay.hpp"

namespace nb = nanobind;
using namespace windowagg::py;

namespace {

// A 1-D C-contiguous buffer of 8-byte items of kind `want` ('d' or 'q').
struct Buf {
    Py_buffer view{};
    bool ok = false;
    Buf(nb::handle o, char want, bool writable, const char* what) {
        int flags = PyBUF_FORMAT | PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0);
        if (PyObject_GetBuffer(o.ptr(), &view, flags) != 0) {
            PyErr_Clear();
            raise("ArgumentTypeError", std::string("decay_slices: ") + what +
                                           " must be a 1-D C-contiguous " +
                                           (want == 'd' ? "float64" : "int64") +
                                           (writable ? " writable" : "") + " buffer");
        }
        if (buffer_kind(view) != want) {
            PyBuffer_Release(&view);  // a throwing constructor runs no destructor
            raise("ArgumentTypeError", std::string("decay_slices: ") + what + " must be 1-D " +
                                           (want == 'd' ? "float64" : "int64"));
        }
        ok = true;
    }
    ~Buf() {
        if (ok) PyBuffer_Release(&view);
    }
    Buf(const Buf&) = delete;
    Buf& operator=(const Buf&) = delete;
    std::size_t size() const { return static_cast<std::size_t>(view.len / 8); }
    template <class T>
    T* ptr() const { return static_cast<T*>(view.buf); }
};

void decay_slices(nb::handle t, nb::handle v, nb::handle lo, nb::handle hi, nb::handle end,
                  double half_life, nb::handle out_s, nb::handle out_w, bool as_of) {
    if (!(std::isfinite(half_life) && half_life > 0)) {
        raise("ArgumentError", "decay_slices: half_life must be a positive finite number");
    }
    Buf bt(t, 'q', false, "t"), bv(v, 'd', false, "v"), blo(lo, 'q', false, "lo"),
        bhi(hi, 'q', false, "hi"), be(end, 'q', false, "end"), bs(out_s, 'd', true, "out_s"),
        bw(out_w, 'd', true, "out_w");
    std::size_t n = bt.size(), r = blo.size();
    if (bv.size() != n || bhi.size() != r || be.size() != r || bs.size() != r || bw.size() != r) {
        raise("ArgumentError", "decay_slices: t and v, and lo, hi, end, out_s and out_w, must have equal lengths");
    }
    // The bounds are copied before they are checked, and the kernel, which runs without the
    // GIL, reads only the copies: another thread may write to the caller's lo and hi
    // meanwhile, and a bound changed after its check would read past the events.
    std::vector<int64_t> lo_(blo.ptr<const int64_t>(), blo.ptr<const int64_t>() + r),
        hi_(bhi.ptr<const int64_t>(), bhi.ptr<const int64_t>() + r);
    const int64_t* l = lo_.data();
    const int64_t* h = hi_.data();
    int64_t prev_lo = 0, prev_hi = 0;
    for (std::size_t j = 0; j < r; ++j) {  // checked before any work: the kernel trusts them
        if (l[j] < prev_lo || h[j] < prev_hi || l[j] > h[j] || h[j] > static_cast<int64_t>(n)) {
            raise("ArgumentError", "decay_slices: window " + std::to_string(j) +
                                       " has bounds [" + std::to_string(l[j]) + ", " +
                                       std::to_string(h[j]) +
                                       "); they must be non-decreasing and within the events");
        }
        prev_lo = l[j];
        prev_hi = h[j];
    }
    {
        nb::gil_scoped_release release;
        windowagg::decay_slices(bt.ptr<const int64_t>(), bv.ptr<const double>(), n, l, h,
                                be.ptr<const int64_t>(), r, half_life, bs.ptr<double>(),
                                bw.ptr<double>(), as_of);
    }
}

}  // namespace

void bind_decay(nb::module_& m) {
    m.def("decay_slices", &decay_slices, nb::arg("t"), nb::arg("v"), nb::arg("lo"), nb::arg("hi"),
          nb::arg("end"), nb::arg("half_life"), nb::arg("out_s"), nb::arg("out_w"),
          nb::arg("as_of") = true,
          "Exponentially decayed sum and weight of v[lo[j]:hi[j]] as of end[j] (half-life in "
          "the unit of t), for every window j, into out_s and out_w; as_of=False: as of each "
          "window's newest event (S / W is the mean, whatever end[j]).");
}
