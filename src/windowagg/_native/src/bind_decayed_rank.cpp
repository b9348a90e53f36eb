// _core.decayed_prefix_quantiles: the compiled twin of windowagg.sketches.exact_decay's prefix
// pass (exact decayed quantiles of windows sharing a start; include/windowagg/decayed_rank.hpp).
#include <nanobind/nanobind.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "inputs.hpp"
#include "py_errors.hpp"
#include "windowagg/decayed_rank.hpp"
#include "windowagg/decayed_top_k.hpp"

namespace nb = nanobind;
using namespace windowagg::py;

namespace {

const char* kWho = "decayed_prefix_quantiles";

// A 1-D C-contiguous buffer of 8-byte items of kind `want` ('d' or 'q'), released on exit.
struct Buf {
    Py_buffer view{};
    bool ok = false;
    Buf(const std::string& who, nb::handle o, char want, bool writable, const char* what) {
        int flags = PyBUF_FORMAT | PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0);
        const std::string kind = want == 'd' ? "float64" : "int64";
        if (PyObject_GetBuffer(o.ptr(), &view, flags) != 0) {
            PyErr_Clear();
            raise("ArgumentTypeError", who + ": " + what + " must be a 1-D C-contiguous " +
                                           kind + (writable ? " writable" : "") + " buffer");
        }
        if (buffer_kind(view) != want) {
            PyBuffer_Release(&view);  // a throwing constructor runs no destructor
            raise("ArgumentTypeError", who + ": " + what + " must be 1-D " + kind);
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

// A writable 1-D C-contiguous buffer of object references (numpy's dtype=object), released
// on exit: where top_k's texts go.
struct ObjBuf {
    Py_buffer view{};
    bool ok = false;
    ObjBuf(const std::string& who, nb::handle o) {
        const int flags = PyBUF_FORMAT | PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE;
        if (PyObject_GetBuffer(o.ptr(), &view, flags) != 0) {
            PyErr_Clear();
            raise("ArgumentTypeError", who + ": out must be a writable 1-D object array (numpy dtype=object)");
        }
        if (view.ndim != 1 || view.itemsize != static_cast<Py_ssize_t>(sizeof(PyObject*)) ||
            view.format == nullptr || std::string(view.format) != "O") {
            PyBuffer_Release(&view);
            raise("ArgumentTypeError", who + ": out must be a writable 1-D object array (numpy dtype=object)");
        }
        ok = true;
    }
    ~ObjBuf() {
        if (ok) PyBuffer_Release(&view);
    }
    ObjBuf(const ObjBuf&) = delete;
    ObjBuf& operator=(const ObjBuf&) = delete;
    std::size_t size() const { return static_cast<std::size_t>(view.len) / sizeof(PyObject*); }
    PyObject** slots() const { return static_cast<PyObject**>(view.buf); }
};

// The positions of out the windows' texts go to (copied, each checked within out).
std::vector<int64_t> positions(const std::string& who, nb::handle at, std::size_t r, const ObjBuf& out) {
    Buf bat(who, at, 'q', false, "at");
    if (bat.size() != r) raise("ArgumentError", who + ": at must have one position per window");
    std::vector<int64_t> pos(bat.ptr<const int64_t>(), bat.ptr<const int64_t>() + r);
    for (std::size_t j = 0; j < r; ++j) {
        if (pos[j] < 0 || pos[j] >= static_cast<int64_t>(out.size())) {
            raise("ArgumentError", who + ": at[" + std::to_string(j) + "] = " + std::to_string(pos[j]) +
                                       " is not a position of out (length " + std::to_string(out.size()) + ")");
        }
    }
    return pos;
}

// The kernel's texts into out[at[j]] as Python strings: the windows in chunks of kChunk, each
// computed without the GIL into one buffer (still in cache when it is copied), then made ASCII
// strings with it (PyUnicode_New and a copy: the texts are ASCII, nothing to decode), each
// replacing the reference out held. The kernel is built without the GIL too (its value table
// is O(n)).
constexpr std::size_t kChunk = 4096;

template <class Kernel, class... Args>
void texts_into(const ObjBuf& out, const std::vector<int64_t>& at, std::size_t r, Args... args) {
    std::optional<Kernel> kernel;
    windowagg::TextChunk chunk;
    PyObject** slots = out.slots();
    for (std::size_t j0 = 0; j0 < r; j0 += kChunk) {
        const std::size_t j1 = std::min(r, j0 + kChunk);
        {
            nb::gil_scoped_release release;
            if (!kernel) kernel.emplace(args...);
            chunk.clear();
            kernel->run(j0, j1, chunk);
        }
        std::size_t from = 0;
        for (std::size_t q = 0; q < j1 - j0; ++q) {
            const std::size_t to = chunk.ends[q];
            PyObject* s = PyUnicode_New(static_cast<Py_ssize_t>(to - from), 127);
            if (s == nullptr) throw nb::python_error();
            std::memcpy(PyUnicode_1BYTE_DATA(s), chunk.bytes.data() + from, to - from);
            PyObject*& slot = slots[at[j0 + q]];
            PyObject* old = slot;
            slot = s;
            Py_XDECREF(old);
            from = to;
        }
    }
}

void decayed_prefix_quantiles(nb::handle rank, nb::handle m, nb::handle e, nb::handle lo,
                              nb::handle hi, double phi, double snap, int64_t rescale,
                              nb::handle out) {
    const std::string who = kWho;
    if (!(phi > 0 && phi < 1)) raise("ArgumentError", who + ": phi must lie in (0, 1)");
    if (!(snap > 0 && snap <= 1)) raise("ArgumentError", who + ": snap must lie in (0, 1]");
    if (rescale < 1 || rescale > 1000) {
        raise("ArgumentError", who + ": rescale must lie in [1, 1000] (weights below 2^1023)");
    }
    Buf brk(who, rank, 'q', false, "rank"), bm(who, m, 'd', false, "m"), be(who, e, 'q', false, "e"),
        blo(who, lo, 'q', false, "lo"), bhi(who, hi, 'q', false, "hi"), bout(who, out, 'q', true, "out");
    const std::size_t n = brk.size(), r = blo.size();
    if (bm.size() != n || be.size() != n || bhi.size() != r || bout.size() != r) {
        raise("ArgumentError", who + ": rank, m and e, and lo, hi and out, must have equal lengths");
    }
    // Copied before they are checked; the kernel (without the GIL) reads only the copies: a
    // bound or rank changed by another thread after its check would index past the tree.
    std::vector<int64_t> rk(brk.ptr<const int64_t>(), brk.ptr<const int64_t>() + n),
        l(blo.ptr<const int64_t>(), blo.ptr<const int64_t>() + r),
        h(bhi.ptr<const int64_t>(), bhi.ptr<const int64_t>() + r);
    for (std::size_t i = 0; i < n; ++i) {
        if (rk[i] < 0 || rk[i] >= static_cast<int64_t>(n)) {
            raise("ArgumentError", who + ": rank[" + std::to_string(i) + "] = " +
                                       std::to_string(rk[i]) + " is not a position in [0, n)");
        }
    }
    int64_t prev_lo = 0, prev_hi = 0;
    for (std::size_t j = 0; j < r; ++j) {
        if (l[j] < prev_lo || h[j] < prev_hi || l[j] >= h[j] || h[j] > static_cast<int64_t>(n)) {
            raise("ArgumentError", who + ": window " + std::to_string(j) + " has bounds [" +
                                       std::to_string(l[j]) + ", " + std::to_string(h[j]) +
                                       "); they must be non-decreasing, non-empty and within the events");
        }
        prev_lo = l[j];
        prev_hi = h[j];
    }
    {
        nb::gil_scoped_release release;
        windowagg::decayed_prefix_quantiles(rk.data(), bm.ptr<const double>(), be.ptr<const int64_t>(), n,
                                            l.data(), h.data(), r, phi, snap, rescale,
                                            bout.ptr<int64_t>());
    }
}

void decayed_prefix_top_k(nb::handle v, nb::handle m, nb::handle e, nb::handle lo, nb::handle hi,
                          nb::handle mend, nb::handle eend, int64_t k, int64_t rescale, nb::handle out,
                          nb::handle at) {
    const std::string who = "decayed_prefix_top_k";
    if (k < 1) raise("ArgumentError", who + ": k must be >= 1");
    if (rescale < 1 || rescale > 1000) {
        raise("ArgumentError", who + ": rescale must lie in [1, 1000] (weights below 2^1023)");
    }
    Buf bv(who, v, 'd', false, "v"), bm(who, m, 'd', false, "m"), be(who, e, 'q', false, "e"), blo(who, lo, 'q', false, "lo"),
        bhi(who, hi, 'q', false, "hi"), bme(who, mend, 'd', false, "mend"), bee(who, eend, 'q', false, "eend");
    const std::size_t n = bv.size(), r = blo.size();
    if (bm.size() != n || be.size() != n || bhi.size() != r || bme.size() != r || bee.size() != r) {
        raise("ArgumentError", who + ": v, m and e, and lo, hi, mend and eend, must have equal lengths");
    }
    // Copies, checked, read by the kernel without the GIL (as decayed_prefix_quantiles).
    std::vector<int64_t> l(blo.ptr<const int64_t>(), blo.ptr<const int64_t>() + r),
        h(bhi.ptr<const int64_t>(), bhi.ptr<const int64_t>() + r);
    std::vector<double> vs(bv.ptr<const double>(), bv.ptr<const double>() + n);
    int64_t prev_lo = 0, prev_hi = 0;
    for (std::size_t j = 0; j < r; ++j) {
        if (l[j] < prev_lo || h[j] < prev_hi || l[j] >= h[j] || h[j] > static_cast<int64_t>(n)) {
            raise("ArgumentError", who + ": window " + std::to_string(j) + " has bounds [" +
                                       std::to_string(l[j]) + ", " + std::to_string(h[j]) +
                                       "); they must be non-decreasing, non-empty and within the events");
        }
        prev_lo = l[j];
        prev_hi = h[j];
    }
    for (std::size_t i = 0; i < n; ++i) {
        if (!std::isfinite(vs[i])) raise("ArgumentError", who + ": v[" + std::to_string(i) + "] is not finite");
    }
    ObjBuf bout(who, out);
    const std::vector<int64_t> pos = positions(who, at, r, bout);
    texts_into<windowagg::PrefixTopK>(bout, pos, r, static_cast<const double*>(vs.data()), bm.ptr<const double>(),
                                           be.ptr<const int64_t>(), n, static_cast<const int64_t*>(l.data()),
                                           static_cast<const int64_t*>(h.data()), bme.ptr<const double>(),
                                           bee.ptr<const int64_t>(), static_cast<std::size_t>(k), rescale);
}

// The window bounds (copied, then checked: within the events, lo <= hi, non-empty if asked).
std::pair<std::vector<int64_t>, std::vector<int64_t>> window_bounds(const std::string& who, const Buf& blo,
                                                                  const Buf& bhi, std::size_t n,
                                                                  bool non_empty) {
    const std::size_t r = blo.size();
    std::vector<int64_t> l(blo.ptr<const int64_t>(), blo.ptr<const int64_t>() + r),
        h(bhi.ptr<const int64_t>(), bhi.ptr<const int64_t>() + r);
    for (std::size_t j = 0; j < r; ++j) {
        if (l[j] < 0 || l[j] > h[j] || (non_empty && l[j] == h[j]) || h[j] > static_cast<int64_t>(n)) {
            raise("ArgumentError", who + ": window " + std::to_string(j) + " has bounds [" +
                                       std::to_string(l[j]) + ", " + std::to_string(h[j]) + "); they must lie within the events" +
                                       (non_empty ? ", non-empty" : ""));
        }
    }
    return {std::move(l), std::move(h)};
}

// Finite values: the kernels sort them (a NaN has no place in the order).
std::vector<double> finite_values(const std::string& who, const Buf& bv) {
    std::vector<double> vs(bv.ptr<const double>(), bv.ptr<const double>() + bv.size());
    for (std::size_t i = 0; i < vs.size(); ++i) {
        if (!std::isfinite(vs[i])) raise("ArgumentError", who + ": v[" + std::to_string(i) + "] is not finite");
    }
    return vs;
}

void decayed_window_quantiles(nb::handle v, nb::handle m, nb::handle e, nb::handle lo, nb::handle hi,
                              double phi, double snap, nb::handle out) {
    const std::string who = "decayed_window_quantiles";
    if (!(phi > 0 && phi < 1)) raise("ArgumentError", who + ": phi must lie in (0, 1)");
    if (!(snap > 0 && snap <= 1)) raise("ArgumentError", who + ": snap must lie in (0, 1]");
    Buf bv(who, v, 'd', false, "v"), bm(who, m, 'd', false, "m"), be(who, e, 'q', false, "e"), blo(who, lo, 'q', false, "lo"),
        bhi(who, hi, 'q', false, "hi"), bout(who, out, 'q', true, "out");
    const std::size_t n = bv.size(), r = blo.size();
    if (bm.size() != n || be.size() != n || bhi.size() != r || bout.size() != r) {
        raise("ArgumentError", who + ": v, m and e, and lo, hi and out, must have equal lengths");
    }
    auto [l, h] = window_bounds(who, blo, bhi, n, false);
    std::vector<double> vs = finite_values(who, bv);
    nb::gil_scoped_release release;
    windowagg::decayed_window_quantiles(vs.data(), bm.ptr<const double>(), be.ptr<const int64_t>(), l.data(),
                                        h.data(), r, phi, snap, bout.ptr<int64_t>());
}

void decayed_window_top_k(nb::handle v, nb::handle m, nb::handle e, nb::handle lo, nb::handle hi,
                          nb::handle mend, nb::handle eend, int64_t k, nb::handle out, nb::handle at) {
    const std::string who = "decayed_window_top_k";
    if (k < 1) raise("ArgumentError", who + ": k must be >= 1");
    Buf bv(who, v, 'd', false, "v"), bm(who, m, 'd', false, "m"), be(who, e, 'q', false, "e"), blo(who, lo, 'q', false, "lo"),
        bhi(who, hi, 'q', false, "hi"), bme(who, mend, 'd', false, "mend"), bee(who, eend, 'q', false, "eend");
    const std::size_t n = bv.size(), r = blo.size();
    if (bm.size() != n || be.size() != n || bhi.size() != r || bme.size() != r || bee.size() != r) {
        raise("ArgumentError", who + ": v, m and e, and lo, hi, mend and eend, must have equal lengths");
    }
    auto [l, h] = window_bounds(who, blo, bhi, n, true);
    std::vector<double> vs = finite_values(who, bv);
    ObjBuf bout(who, out);
    const std::vector<int64_t> pos = positions(who, at, r, bout);
    texts_into<windowagg::WindowTopK>(bout, pos, r, static_cast<const double*>(vs.data()), bm.ptr<const double>(),
                                           be.ptr<const int64_t>(), n, static_cast<const int64_t*>(l.data()),
                                           static_cast<const int64_t*>(h.data()), bme.ptr<const double>(),
                                           bee.ptr<const int64_t>(), static_cast<std::size_t>(k));
}

nb::str py_float_repr(double x) {
    if (!std::isfinite(x)) raise("ArgumentError", "py_float_repr: x must be finite");
    std::string s = windowagg::py_float_repr(x);
    return nb::str(s.data(), s.size());
}

}  // namespace

void bind_decayed_rank(nb::module_& m) {
    m.def("decayed_prefix_top_k", &decayed_prefix_top_k, nb::arg("v"), nb::arg("m"), nb::arg("e"),
          nb::arg("lo"), nb::arg("hi"), nb::arg("mend"), nb::arg("eend"), nb::arg("k"),
          nb::arg("rescale"), nb::arg("out"), nb::arg("at"),
          "For windows [lo[j], hi[j]) (non-empty, bounds non-decreasing), the JSON text of the k "
          "heaviest values by decayed weight as of each window's end (2^(end/h) = mend 2^eend), "
          "into out[at[j]] (out a numpy object array): windowagg.sketches.exact_decay's prefix "
          "top_k pass (the GIL released but to make the strings).");
    m.def("decayed_window_quantiles", &decayed_window_quantiles, nb::arg("v"), nb::arg("m"), nb::arg("e"), nb::arg("lo"), nb::arg("hi"), nb::arg("phi"), nb::arg("snap"),
          nb::arg("out"),
          "For every window [lo[j], hi[j]) the event whose value is the smallest q with "
          "W(<= q) >= (phi W) snap (-1 if empty), into out: exact_decay.quantile_slices's gathered "
          "windows (the GIL released).");
    m.def("decayed_window_top_k", &decayed_window_top_k, nb::arg("v"), nb::arg("m"), nb::arg("e"),
          nb::arg("lo"), nb::arg("hi"), nb::arg("mend"), nb::arg("eend"), nb::arg("k"), nb::arg("out"),
          nb::arg("at"),
          "For every window [lo[j], hi[j]) (non-empty) the JSON text of the k heaviest values by "
          "decayed weight as of its end, into out[at[j]] (out a numpy object array): "
          "exact_decay.top_k_slices's gathered windows (the GIL released but to make the strings).");
    m.def("py_float_repr", &py_float_repr, nb::arg("x"),
          "repr(x) of a finite float, as the native top_k writes it (tests compare with Python).");
    m.def("decayed_prefix_quantiles", &decayed_prefix_quantiles, nb::arg("rank"), nb::arg("m"),
          nb::arg("e"), nb::arg("lo"), nb::arg("hi"), nb::arg("phi"), nb::arg("snap"),
          nb::arg("rescale"), nb::arg("out"),
          "For windows [lo[j], hi[j]) (non-empty, bounds non-decreasing), the rank of the "
          "smallest value q with W(<= q) >= (phi W) snap, weights m_i 2^(e_i - N), into out: "
          "windowagg.sketches.exact_decay.prefix_quantiles's pass (the GIL released).");
}
