// _core.QDigest: the compiled twin that windowagg.sketches.qdigest.QDigest holds
// (include/windowagg/qdigest.hpp). Keys and weights arrive checked by the public class;
// every entry point checks them again (a caller may reach _core directly) before anything
// changes. No call runs Python code or releases the GIL, so each call is atomic: two
// threads' calls are serialised by the GIL, and there is no callback to re-enter.
#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "py_errors.hpp"
#include "windowagg/qdigest.hpp"

namespace nb = nanobind;
using namespace windowagg::py;
using QD = windowagg::QDigestCore;

namespace {

std::string universe_str(uint64_t umax) {
    return umax == ~0ull ? std::string("18446744073709551616") : std::to_string(umax + 1);
}

void check_params(uint64_t umax, double eps, const char* cls) {
    if (umax < 1) raise(cls, "universe must be in [2, 2**64], got " + std::to_string(umax + 1));
    if (!(eps > 0.0 && eps < 1.0)) raise(cls, "eps must be a number in (0, 1), got " + std::to_string(eps));
}

void check_key(const QD& q, uint64_t x) {
    if (x > q.umax())
        raise("ArgumentError", "QDigest key " + std::to_string(x) + " is outside the universe [0, " +
                                   universe_str(q.umax()) + ")");
}

void check_weight(double w) {
    if (!(w > 0.0 && w < INFINITY))
        raise("ArgumentError", "weight must be a positive finite number, got " + std::to_string(w));
}

// n + w must stay a float64 (a digest whose n is infinite has no thresholds left)
void check_total(const QD& q, double w) {
    if (!(q.n() + w < INFINITY))
        raise("ArgumentError", "QDigest: the total weight would overflow float64; scale the weights down");
}

void check_phi(double phi) {
    if (!(phi >= 0.0 && phi <= 1.0)) raise("ArgumentError", "phi must be a number in [0, 1], got " + std::to_string(phi));
}

// A 1-D C-contiguous buffer of 8-byte items: 'q' (int64), 'Q' (uint64) or 'd' (float64).
struct Buf {
    Py_buffer view{};
    bool ok = false;
    char kind = 0;
    std::size_t n = 0;
    Buf(nb::handle o, const char* what, const char* kinds) {
        if (!PyObject_CheckBuffer(o.ptr()) || PyObject_GetBuffer(o.ptr(), &view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) != 0) {
            PyErr_Clear();
            raise("ArgumentTypeError", std::string("QDigest.update_many needs ") + what +
                                           " as a 1-D C-contiguous buffer, got " + Py_TYPE(o.ptr())->tp_name);
        }
        ok = true;
        const char* f = view.format ? view.format : "B";
        if (*f == '@' || *f == '=' || *f == '<') ++f;
        char k = (f[0] && !f[1]) ? f[0] : 0;
        if (k == 'l') k = 'q';
        if (k == 'L') k = 'Q';
        if (view.ndim != 1 || view.itemsize != 8 || !k || !std::strchr(kinds, k)) {
            PyBuffer_Release(&view);
            ok = false;
            raise("ArgumentTypeError", std::string("QDigest.update_many needs ") + what + " as a 1-D " +
                                           (std::strchr(kinds, 'd') ? "float64" : "int64 or uint64") + " buffer");
        }
        kind = k;
        n = static_cast<std::size_t>(view.shape[0]);
    }
    ~Buf() {
        if (ok) PyBuffer_Release(&view);
    }
    Buf(const Buf&) = delete;
    Buf& operator=(const Buf&) = delete;
    const void* ptr() const { return view.buf; }
};

template <class K>
void add_batch(QD& q, const K* keys, std::size_t n, const double* w) {
    // all checked before the digest changes
    if constexpr (std::is_signed_v<K>) {
        K lo = keys[0], hi = keys[0];
        for (std::size_t i = 1; i < n; ++i) {
            lo = keys[i] < lo ? keys[i] : lo;
            hi = keys[i] > hi ? keys[i] : hi;
        }
        if (lo < 0) raise("ArgumentError", "QDigest key " + std::to_string(lo) + " is outside the universe [0, " + universe_str(q.umax()) + ")");
        check_key(q, static_cast<uint64_t>(hi));
    } else if (q.umax() < ~0ull) {  // a universe of 2^64 holds every uint64
        K hi = keys[0];
        for (std::size_t i = 1; i < n; ++i) hi = keys[i] > hi ? keys[i] : hi;
        check_key(q, static_cast<uint64_t>(hi));
    }
    double total = 0.0;
    bool whole = true;
    if (w) {
        for (std::size_t i = 0; i < n; ++i)
            if (!(w[i] > 0.0 && w[i] < INFINITY)) raise("ArgumentError", "weights must be positive finite numbers");
        for (std::size_t i = 0; i < n; ++i) {
            total = total + w[i];  // in input order, as np.cumsum
            whole = whole && w[i] == std::floor(w[i]);
        }
    } else {
        total = static_cast<double>(n);
    }
    check_total(q, total);
    if (!w && q.integral() && q.n() + total <= QD::EXACT) {
        q.add_ones(keys, n);  // exact integers: any order of additions gives these floats
        return;
    }
    if (w && !(q.integral() && whole && q.n() + total <= QD::EXACT)) {
        q.add_weighted(keys, w, n, total);  // the digest is not integral after it: pairs held back
        return;
    }
    windowagg::QDigestLevel sums;  // per key: its weights summed in input order, from 0.0
    for (std::size_t i = 0; i < n; ++i) sums.add(static_cast<uint64_t>(keys[i]), w ? w[i] : 1.0);
    q.add_leaf_sums(sums, total, whole);
}

nb::bytes be_u64s(const std::vector<uint64_t>& v) {
    std::string s(v.size() * 8, '\0');
    for (std::size_t i = 0; i < v.size(); ++i)
        for (int b = 0; b < 8; ++b) s[i * 8 + static_cast<std::size_t>(b)] = static_cast<char>(v[i] >> (56 - 8 * b));
    return nb::bytes(s.data(), s.size());
}

uint64_t read_be(const unsigned char* p) {
    uint64_t v = 0;
    for (int b = 0; b < 8; ++b) v = (v << 8) | p[b];
    return v;
}

// The state from its field bytes (codec layout 2 of windowagg.QDigest); CodecError for
// anything but a whole, valid digest. Sizes are checked against the bytes given before
// anything is allocated.
QD* load(uint64_t umax, double eps, double n, nb::bytes depths, nb::bytes offsets, nb::bytes counts) {
    auto fail = [](const std::string& why) { raise("CodecError", "corrupt QDigest: " + why); };
    if (umax < 1 || !(eps > 0.0 && eps < 1.0) || !(n >= 0.0 && n < INFINITY))
        fail("bad parameters universe=" + universe_str(umax) + ", eps=" + std::to_string(eps) + ", n=" + std::to_string(n));
    std::size_t k = depths.size();
    if (offsets.size() != 8 * k) fail(std::to_string(k) + " node depths but " + std::to_string(offsets.size()) + " bytes of offsets");
    if (counts.size() != 8 * k) fail("node ids and counts differ in number");
    auto q = std::make_unique<QD>(umax, eps);
    const int L = q->bits();
    const auto* d = reinterpret_cast<const unsigned char*>(depths.c_str());
    const auto* o = reinterpret_cast<const unsigned char*>(offsets.c_str());
    const auto* c = reinterpret_cast<const unsigned char*>(counts.c_str());
    std::vector<QD::Post> nodes;
    nodes.reserve(k);
    std::vector<windowagg::QDigestLevel> seen(static_cast<std::size_t>(L) + 1);
    double sum = 0.0, comp = 0.0;  // Neumaier: the reference compares with math.fsum
    for (std::size_t i = 0; i < k; ++i) {
        int depth = d[i];
        uint64_t off = read_be(o + 8 * i);
        uint64_t bits = read_be(c + 8 * i);
        double cnt;
        std::memcpy(&cnt, &bits, 8);
        if (depth > L || (depth < 64 && (off >> depth)))
            fail("node (depth " + std::to_string(depth) + ", offset " + std::to_string(off) + ") out of range");
        if (!std::isfinite(cnt)) fail("non-finite number in an array");
        if (cnt < 0) fail("negative node count");
        if (depth == L && off > umax) fail("leaf " + std::to_string(off) + " outside the universe [0, " + universe_str(umax) + ")");
        if (!seen[static_cast<std::size_t>(depth)].set(off, 0.0)) fail("duplicate node ids");
        nodes.push_back(QD::Post{0, 0, depth, off, cnt});
        double t = sum + cnt;
        comp += std::fabs(sum) >= std::fabs(cnt) ? (sum - t) + cnt : (cnt - t) + sum;
        sum = t;
    }
    sum += comp;
    double tol = std::max(1e-9 * std::max(std::fabs(sum), std::fabs(n)), 1e-9);
    if (!(std::fabs(sum - n) <= tol)) fail("node counts do not sum to the total weight");
    q->load(nodes, n);
    return q.release();
}

}  // namespace

void bind_qdigest(nb::module_& m) {
    nb::class_<QD>(m, "QDigest", "The q-digest over [0, umax] (windowagg.sketches.qdigest.QDigest holds it).")
        .def("__init__", [](QD* self, uint64_t umax, double eps) {
            check_params(umax, eps, "ArgumentError");
            new (self) QD(umax, eps);
        }, nb::arg("umax"), nb::arg("eps"))
        .def_prop_ro("umax", &QD::umax)
        .def_prop_ro("eps", &QD::eps)
        .def_prop_ro("bits", &QD::bits)
        .def_prop_ro("n", &QD::n)
        .def_prop_ro("size", &QD::size)
        .def("__len__", &QD::size)
        .def("threshold", &QD::threshold)
        .def("copy", [](const QD& q) { return new QD(q); })
        .def("update", [](QD& q, uint64_t x, double w) {
            check_key(q, x);
            check_weight(w);
            check_total(q, w);
            q.update(x, w);
        }, nb::arg("x"), nb::arg("weight") = 1.0, "Add key x with weight w. O(1) amortized.")
        .def("update_many", [](QD& q, nb::handle keys, nb::handle weights) {
            Buf k(keys, "keys", "qQ");
            if (!k.n) return;
            if (weights.is_none()) {
                if (k.kind == 'q') add_batch(q, static_cast<const int64_t*>(k.ptr()), k.n, nullptr);
                else add_batch(q, static_cast<const uint64_t*>(k.ptr()), k.n, nullptr);
                return;
            }
            Buf w(weights, "weights", "d");
            if (w.n != k.n)
                raise("ArgumentError", "xs has " + std::to_string(k.n) + " keys but weights has " + std::to_string(w.n) + " entries");
            const double* wp = static_cast<const double*>(w.ptr());
            if (k.kind == 'q') add_batch(q, static_cast<const int64_t*>(k.ptr()), k.n, wp);
            else add_batch(q, static_cast<const uint64_t*>(k.ptr()), k.n, wp);
        }, nb::arg("keys"), nb::arg("weights").none() = nb::none(),
           "Add a batch of keys (int64/uint64 buffer), weights (float64 buffer) or 1 each; all "
           "checked first; compresses once. O(b + s).")
        .def("merge", [](QD& q, const QD& o) {
            if (o.umax() != q.umax() || o.eps() != q.eps())
                raise("ArgumentError", "cannot merge QDigest(universe=" + universe_str(o.umax()) + ", eps=" + std::to_string(o.eps()) +
                                           ") into QDigest(universe=" + universe_str(q.umax()) + ", eps=" + std::to_string(q.eps()) +
                                           "): parameters must match");
            check_total(q, o.n());
            if (&o == &q) {
                QD copy(o);
                q.merge(copy);
            } else {
                q.merge(o);
            }
        })
        .def("compress", &QD::compress)
        .def("scale", [](QD& q, double f, bool rebase) {
            if (!(f >= 0.0 && f < INFINITY)) raise("ArgumentError", "QDigest.scale needs a finite factor >= 0, got " + std::to_string(f));
            if (!(q.n() * f < INFINITY)) raise("ArgumentError", "QDigest: the total weight would overflow float64; scale the weights down");
            q.scale(f, rebase);
        }, nb::arg("f"), nb::arg("rebase"),
           "Every count times f; rebase: drop counts that become 0 and set n to their exact sum "
           "(math.fsum), else n times f. O(s).")
        .def("rescaled_total", [](const QD& q, double f) {
            if (!(f >= 0.0 && f < INFINITY)) raise("ArgumentError", "QDigest.rescaled_total needs a finite factor >= 0, got " + std::to_string(f));
            return q.rescaled_total(f);
        }, nb::arg("f"), "The n that scale(f, True) would set (nothing changes). O(s).")
        .def("add_scaled", [](QD& q, const QD& o, double gamma) {
            if (o.umax() != q.umax() || o.eps() != q.eps())
                raise("ArgumentError", "cannot add QDigest(universe=" + universe_str(o.umax()) + ", eps=" + std::to_string(o.eps()) +
                                           ") into QDigest(universe=" + universe_str(q.umax()) + ", eps=" + std::to_string(q.eps()) +
                                           "): parameters must match");
            if (!(gamma >= 0.0 && gamma < INFINITY)) raise("ArgumentError", "QDigest.add_scaled needs a finite factor >= 0, got " + std::to_string(gamma));
            if (!(q.n() + o.n() * gamma < INFINITY)) raise("ArgumentError", "QDigest: the total weight would overflow float64; scale the weights down");
            q.add_scaled(o, gamma);
        }, nb::arg("other"), nb::arg("gamma"),
           "Node-wise count += gamma * other's, n += gamma * other's n; no compress. O(s2).")
        .def("drop_zeros", &QD::drop_zeros, "Drop the nodes whose count is 0. O(s).")
        .def("compress_if_full", &QD::compress_if_full, "compress() when over the size cap. O(s).")
        .def("rank_bounds", [](const QD& q, uint64_t x) { return q.rank_bounds(x); })
        .def("quantile", [](const QD& q, double phi) {
            check_phi(phi);
            if (!q.size()) raise("EmptyWindowError", "quantile of an empty QDigest; add values first");
            return q.quantile(phi);
        })
        .def("quantiles", [](const QD& q, const std::vector<double>& phis) {
            for (double p : phis) check_phi(p);
            if (!q.size() && !phis.empty()) raise("EmptyWindowError", "quantile of an empty QDigest; add values first");
            std::vector<uint64_t> out;
            out.reserve(phis.size());
            for (double p : phis) out.push_back(q.quantile(p));
            return out;
        }, "quantile() of each phi, all checked first. O(s log s + k log s).")
        .def("frequency_bounds", [](const QD& q, uint64_t x) {
            return x > q.umax() ? std::pair<double, double>{0.0, 0.0} : q.frequency_bounds(x);
        })
        .def("heavy_hitters", [](const QD& q, double phi) {
            check_phi(phi);
            return q.heavy_hitters(phi);
        })
        .def("post_nodes", [](const QD& q) {
            std::vector<std::tuple<uint64_t, uint64_t, double>> out;
            for (const QD::Post& p : q.post()) out.emplace_back(QD::low_of(p.off, p.shift), p.hi, p.count);
            return out;
        }, "(lo, hi, count) of every node in post-order.")
        .def("body", [](const QD& q) {
            std::vector<QD::Post> nodes = q.nodes_by_id();
            std::string ds(nodes.size(), '\0');
            std::vector<uint64_t> offs, cnts;
            offs.reserve(nodes.size());
            cnts.reserve(nodes.size());
            for (std::size_t i = 0; i < nodes.size(); ++i) {
                ds[i] = static_cast<char>(nodes[i].depth);
                offs.push_back(nodes[i].off);
                uint64_t b;
                std::memcpy(&b, &nodes[i].count, 8);
                cnts.push_back(b);
            }
            return nb::make_tuple(nb::bytes(ds.data(), ds.size()), be_u64s(offs), be_u64s(cnts));
        }, "(depths, big-endian uint64 offsets, big-endian float64 counts) sorted by heap id.")
        .def_static("load", &load, nb::arg("umax"), nb::arg("eps"), nb::arg("n"), nb::arg("depths"),
                    nb::arg("offsets"), nb::arg("counts"),
                    "A digest from the fields body() gives; CodecError for anything invalid.")
        .def("_check", [](const QD& q) {
            std::string broken = q.check();
            if (!broken.empty()) raise("InvariantError", "QDigest: " + broken);
        });
}
