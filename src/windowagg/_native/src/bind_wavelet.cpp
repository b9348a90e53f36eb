// _core.WaveletMatrix: the compiled twin of windowagg.wavelet_matrix.PyWaveletMatrix
// (include/windowagg/wavelet_matrix.hpp): codes in, codes out; the public class maps values
// to codes and back. Every argument is checked before anything is allocated or computed.
#include <nanobind/nanobind.h>

#include <cstdint>
#include <string>
#include <vector>

#include "inputs.hpp"
#include "py_errors.hpp"
#include "windowagg/wavelet_matrix.hpp"

namespace nb = nanobind;
using namespace windowagg::py;

namespace {

// A C-contiguous int64 buffer of 1 (or, with `two_d`, 1 or 2) dimensions; `writable` for out.
struct I64Buf {
    Py_buffer view{};
    bool ok = false;
    std::size_t rows = 0, cols = 1;
    I64Buf(nb::handle o, const std::string& who, const char* what, bool two_d, bool writable) {
        int flags = PyBUF_FORMAT | PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0);
        std::string want = std::string(two_d ? " int64 array of shape (windows,) or (windows, m)"
                                             : " 1-D int64 array") + (writable ? ", writable" : "");
        if (!PyObject_CheckBuffer(o.ptr()) || PyObject_GetBuffer(o.ptr(), &view, flags) != 0) {
            PyErr_Clear();
            raise("ArgumentTypeError", who + " needs " + what + " as a C-contiguous" + want + ", got " +
                                           std::string(Py_TYPE(o.ptr())->tp_name));
        }
        bool shape_ok = view.ndim == 1 || (two_d && view.ndim == 2) || writable;
        if (buffer_kind(view, true) != 'q' || !shape_ok) {
            PyBuffer_Release(&view);  // a throwing constructor runs no destructor
            raise("ArgumentTypeError", who + " needs " + what + " as a C-contiguous" + want);
        }
        ok = true;
        rows = view.shape ? static_cast<std::size_t>(view.shape[0]) : static_cast<std::size_t>(view.len / 8);
        cols = view.ndim == 2 && view.shape ? static_cast<std::size_t>(view.shape[1]) : 1;
    }
    ~I64Buf() {
        if (ok) PyBuffer_Release(&view);
    }
    I64Buf(const I64Buf&) = delete;
    I64Buf& operator=(const I64Buf&) = delete;
    std::size_t items() const { return static_cast<std::size_t>(view.len / 8); }
    int64_t* ptr() const { return static_cast<int64_t*>(view.buf); }
};

using WM = windowagg::WaveletMatrix;

void check_range(int64_t lo, int64_t hi, std::size_t n, std::size_t i, const std::string& who) {
    if (lo < 0 || lo > hi || hi > static_cast<int64_t>(n))
        raise("ArgumentError", who + ": window " + std::to_string(i) + " is [" + std::to_string(lo) + ", " +
                                   std::to_string(hi) + ") over " + std::to_string(n) +
                                   " codes; each window needs 0 <= lo <= hi <= len");
}

void check_rank(int64_t k, int64_t size, std::size_t i, const std::string& who) {
    if (k < 0 || k >= size)
        raise("EmptyWindowError", who + ": window " + std::to_string(i) + " holds " + std::to_string(size) +
                                      " values and has no rank " + std::to_string(k) +
                                      "; ranks must be between 0 and its size - 1");
}

}  // namespace

void bind_wavelet(nb::module_& m) {
    nb::class_<WM>(m, "WaveletMatrix", "A wavelet matrix over int64 codes in [0, sigma): k-th smallest by range.")
        .def("__init__", [](WM* self, nb::handle codes, int64_t sigma) {
            std::string who = "WaveletMatrix(codes, sigma)";
            I64Buf c(codes, who, "codes", false, false);
            if (sigma < 0) raise("ArgumentError", who + ": sigma must be >= 0, got " + std::to_string(sigma));
            const int64_t* p = c.ptr();
            for (std::size_t i = 0; i < c.rows; ++i)
                if (p[i] < 0 || p[i] >= sigma)
                    raise("ArgumentError", who + ": code " + std::to_string(i) + " is " + std::to_string(p[i]) +
                                               "; every code must lie in [0, sigma) = [0, " + std::to_string(sigma) + ")");
            nb::gil_scoped_release release;
            new (self) WM(p, c.rows, static_cast<uint64_t>(sigma));
        }, nb::arg("codes"), nb::arg("sigma"))
        .def("__len__", &WM::size)
        .def_prop_ro("levels", &WM::levels)
        .def_prop_ro("sigma", &WM::sigma)
        .def("kth", [](const WM& w, int64_t lo, int64_t hi, int64_t k) -> int64_t {
            std::string who = "WaveletMatrix.kth";
            check_range(lo, hi, w.size(), 0, who);
            check_rank(k, hi - lo, 0, who);
            return static_cast<int64_t>(w.kth(static_cast<std::size_t>(lo), static_cast<std::size_t>(hi),
                                              static_cast<std::size_t>(k)));
        }, nb::arg("lo"), nb::arg("hi"), nb::arg("k"),
           "The k-th smallest (0-based) code of codes[lo:hi]. O(log sigma).")
        .def("kth_slices", [](const WM& w, nb::handle lo, nb::handle hi, nb::handle ranks, nb::handle out) {
            std::string who = "WaveletMatrix.kth_slices";
            I64Buf l(lo, who, "lo", false, false), h(hi, who, "hi", false, false);
            I64Buf rk(ranks, who, "ranks", true, false), o(out, who, "out", true, true);
            std::size_t r = l.rows, per = rk.cols;
            if (h.rows != r || rk.rows != r)
                raise("ArgumentError", who + ": " + std::to_string(r) + " lo, " + std::to_string(h.rows) + " hi and " +
                                           std::to_string(rk.rows) + " rows of ranks; give one of each per window");
            if (o.items() != r * per)
                raise("ArgumentError", who + ": out holds " + std::to_string(o.items()) + " items for " +
                                           std::to_string(r * per) + " answers; give one slot per window and rank");
            // The bounds and ranks are copied before they are checked, and the loop below,
            // which runs without the GIL, reads only the copies: another thread may write
            // to the caller's arrays meanwhile, and a bound changed after its check would
            // index past the levels (an out-of-bounds read).
            std::vector<int64_t> a_(l.ptr(), l.ptr() + r), b_(h.ptr(), h.ptr() + r), k_(rk.ptr(), rk.ptr() + r * per);
            const int64_t *a = a_.data(), *b = b_.data(), *k = k_.data();
            for (std::size_t i = 0; i < r; ++i) {
                check_range(a[i], b[i], w.size(), i, who);
                for (std::size_t j = 0; j < per; ++j) check_rank(k[i * per + j], b[i] - a[i], i, who);
            }
            int64_t* dst = o.ptr();
            nb::gil_scoped_release release;
            for (std::size_t i = 0; i < r; ++i)
                for (std::size_t j = 0; j < per; ++j)
                    dst[i * per + j] = static_cast<int64_t>(w.kth(static_cast<std::size_t>(a[i]), static_cast<std::size_t>(b[i]),
                                                                  static_cast<std::size_t>(k[i * per + j])));
        }, nb::arg("lo"), nb::arg("hi"), nb::arg("ranks"), nb::arg("out"),
           "Per window i and rank j: the ranks[i, j]-th smallest code of codes[lo[i]:hi[i]], into out (int64, "
           "windows * m items). Bounds in any order; everything is checked before anything is written.")
        .def("_check", [](const WM& w) {
            std::string broken = w.check();
            if (!broken.empty()) raise("InvariantError", "WaveletMatrix: " + broken);
        });
}
