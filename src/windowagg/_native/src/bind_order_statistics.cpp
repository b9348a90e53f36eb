// _core.OrderStatistics: the native twin of windowagg.order_statistics.OrderStatistics.
// Keys are Nums (exact Python ints within int64 and floats, compared exactly as Python
// compares them) until a value of any other type arrives; the multiset then deoptimises
// once to Python objects compared with `<` (same answers, same errors).
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>

#include <cmath>
#include <string>
#include <vector>

#include "adapters.hpp"
#include "call_guard.hpp"
#include "fast_methods.hpp"
#include "inputs.hpp"
#include "slices.hpp"
#include "windowagg/order_statistics.hpp"

namespace nb = nanobind;
using namespace windowagg::py;

namespace {

struct NumLess {
    bool operator()(const Num& a, const Num& b) const { return num_lt(a, b); }
};
struct ObjLess {
    bool operator()(const nb::object& a, const nb::object& b) const {
        int r = PyObject_RichCompareBool(a.ptr(), b.ptr(), Py_LT);
        if (r < 0) throw_if_error();
        return r == 1;
    }
};

const char* kWho = "OrderStatistics";

[[noreturn]] void unordered(nb::handle x) {
    raise("ValueOrderError", std::string(kWho) + " refuses " + repr_str(x) +
                                 ": it is not equal to itself (NaN), so it has no place in the order; "
                                 "drop or repair the record first");
}

// A value that is not equal to itself (NaN, or an object that says so).
void refuse_unordered(nb::handle x) {
    PyObject* r = PyObject_RichCompare(x.ptr(), x.ptr(), Py_NE);
    if (!r) throw_if_error();
    int t = PyObject_IsTrue(r);
    Py_DECREF(r);
    if (t < 0) throw_if_error();
    if (t) unordered(x);
}

// Keys in the cheapest form that holds them all: float64 while every value is a Python float
// (8-byte keys, one `<`: half the bytes a random leaf brings into the cache), tagged numbers
// (Num) once an int arrives, Python objects once anything else does. Each switch is one-way
// and keeps the multiset (counts included); answers and errors are the same in every mode.
struct FltLess {
    bool operator()(double a, double b) const { return a < b; }
};

struct OS {
    enum Mode : uint8_t { FLT, NUM, OBJ } mode = FLT;
    windowagg::OrderStatistics<double, FltLess> flt;
    windowagg::OrderStatistics<Num, NumLess> num;
    windowagg::OrderStatistics<nb::object, ObjLess> obj;
    CallGuard guard;    // operations on the object keys running (a comparison runs Python code)
    bool gone = false;  // cleared by the garbage collector (gc.hpp); mode is then OBJ

    // Held around every use of the object keys: refuses a cleared multiset, keeps the GC off
    // the tree while it changes, and (call_guard.hpp) refuses a change from inside a
    // comparison of the same thread (a value's `<` calling back into the multiset), or waits
    // for another thread's operation. The numeric modes run no Python code: no cost there.
    struct Op {
        OS& s;
        Enter e;
        explicit Op(OS& o, Access a = Access::Write)
            : s(o), e(o.guard, a, kWho, a == Access::Write ? "insert() or evict()" : "a read") {
            if (s.gone) cleared(kWho, "multiset");
        }
    };
    void traverse(GcVisit& v) const {
        if (mode == OBJ && !guard.depth) obj.for_each_owned(v);
    }
    void clear() {
        if (guard.depth) return;
        gone = true;
        mode = OBJ;  // every call reaches an Op
        auto keys = std::move(obj);  // obj is empty before the keys' destructors run
    }

    bool generic() const { return mode == OBJ; }
    int64_t size() const {
        if (gone) [[unlikely]]
            cleared(kWho, "multiset");
        return mode == FLT ? flt.size() : mode == NUM ? num.size() : obj.size();
    }

    // x as a numeric key: true; false when it needs the generic keys. NaN raises.
    static bool key(nb::handle x, Num& k) {
        if (!num_from_py(x.ptr(), k)) return false;
        if (k.tag == Num::FLT && std::isnan(k.d)) unordered(x);
        return true;
    }
    // FLT -> NUM (the tree is rebuilt first: a failure leaves the float keys in place)
    void to_num() {
        if (mode != FLT) return;
        windowagg::OrderStatistics<Num, NumLess> t;
        flt.for_each([&](double k, int64_t c) { t.insert(Num::of_flt(k), c); });
        num = std::move(t);
        flt.clear();
        mode = NUM;
    }
    // -> OBJ
    void deopt() {
        if (mode == OBJ) return;
        windowagg::OrderStatistics<nb::object, ObjLess> o;
        if (mode == FLT) flt.for_each([&](double k, int64_t c) { o.insert(nb::steal(PyFloat_FromDouble(k)), c); });
        else num.for_each([&](const Num& k, int64_t c) { o.insert(num_to_py(k), c); });
        obj = std::move(o);
        flt.clear();
        num.clear();
        mode = OBJ;
    }
    // OBJ -> `was` again, after a call that deoptimised and then failed: the keys are still
    // the numbers they were (a failed operation changes nothing), and the multiset keeps
    // its form as well as its values. The numeric tree is built before the keys go.
    void reopt(Mode was) {
        if (was == OBJ || mode != OBJ) return;
        if (was == FLT) {
            windowagg::OrderStatistics<double, FltLess> t;
            obj.for_each([&](const nb::object& k, int64_t c) { t.insert(PyFloat_AS_DOUBLE(k.ptr()), c); });
            flt = std::move(t);
        } else {
            windowagg::OrderStatistics<Num, NumLess> t;
            obj.for_each([&](const nb::object& k, int64_t c) {
                Num n;
                num_from_py(k.ptr(), n);  // a key that deopt() made from a Num
                t.insert(n, c);
            });
            num = std::move(t);
        }
        mode = was;
        auto keys = std::move(obj);  // obj is empty before the keys' destructors run
    }
    // The error of a call `op` on x whose comparisons raised e, the multiset as it was
    // (form included): a TypeError (x and the values held do not compare) becomes the
    // Python class's ArgumentTypeError (windowagg.order_statistics._unordered, the same
    // message), the TypeError as its cause; any other error goes through unchanged.
    [[noreturn]] void failed(nb::handle x, const char* op, Mode was, nb::python_error& e) {
        reopt(was);
        if (!e.matches(PyExc_TypeError)) throw;
        auto name = [](nb::handle v) { return std::string(nb::str(v.type().attr("__name__")).c_str()); };
        std::string held = "none";
        if (int64_t n = size()) {
            std::string lo = name(kth(0)), hi = name(kth(n - 1));
            held = lo == hi ? lo : lo < hi ? lo + ", " + hi : hi + ", " + lo;
        }
        nb::str rep = nb::steal<nb::str>(PyUnicode_Substring(nb::repr(x).ptr(), 0, 60));
        std::string msg = std::string(kWho) + "." + op + "(" + rep.c_str() + "): a " + name(x) +
                          " cannot be ordered among the values held (" + held + "; " +
                          nb::str(e.value()).c_str() + "); keep one comparable value type per multiset: "
                          "convert the values first (e.g. float(x)) or route the record to the rejects";
        nb::object err = nb::steal(PyObject_CallOneArg(error_class("ArgumentTypeError"), nb::str(msg.c_str()).ptr()));
        if (!err.is_valid()) throw_if_error();
        PyException_SetCause(err.ptr(), e.value().inc_ref().ptr());  // `raise ... from e`
        PyErr_SetObject(err.type().ptr(), err.ptr());
        throw_if_error();
    }
    void insert_num(const Num& k) {
        if (k.tag == Num::FLT && std::isnan(k.d)) unordered(nb::steal(PyFloat_FromDouble(k.d)));
        if (mode == FLT) {
            if (k.tag == Num::FLT) { flt.insert(k.d); return; }
            to_num();
        }
        if (mode == NUM) {
            num.insert(k);
            return;
        }
        Op op(*this);
        obj.insert(num_to_py(k));
    }
    void insert(nb::handle x) {
        Num k;
        if (mode != OBJ && key(x, k)) { insert_num(k); return; }
        refuse_unordered(x);
        Mode was = mode;
        deopt();
        Op op(*this);
        try {
            obj.insert(nb::borrow(x));
        } catch (nb::python_error& e) {
            failed(x, "insert", was, e);
        }
    }
    bool erase_num(const Num& k) {
        // NaN equals nothing: without this check the search would stop at the smallest key
        if (k.tag == Num::FLT && std::isnan(k.d)) unordered(nb::steal(PyFloat_FromDouble(k.d)));
        if (mode == FLT) {
            if (k.tag == Num::FLT) return flt.erase(k.d);
            to_num();
        }
        if (mode == NUM) return num.erase(k);
        Op op(*this);
        return obj.erase(num_to_py(k));
    }
    bool erase(nb::handle x) {
        Num k;
        if (mode != OBJ && key(x, k)) return erase_num(k);
        refuse_unordered(x);  // Decimal('NaN') & co., as the reference and insert(): nothing changes
        Mode was = mode;
        deopt();
        Op op(*this);
        try {
            return obj.erase(nb::borrow(x));
        } catch (nb::python_error& e) {
            failed(x, "evict", was, e);
        }
    }
    int64_t rank(nb::handle x) {
        Num k;
        if (mode != OBJ && key(x, k)) {
            if (mode == FLT && k.tag == Num::FLT) return flt.rank(k.d);
            to_num();
            return num.rank(k);
        }
        refuse_unordered(x);
        Mode was = mode;
        deopt();
        Op op(*this, Access::Read);
        try {
            return obj.rank(nb::borrow(x));
        } catch (nb::python_error& e) {
            failed(x, "rank", was, e);
        }
    }
    nb::object kth(int64_t i) const {
        if (mode == FLT) return nb::steal(PyFloat_FromDouble(flt.kth(i)));
        return mode == NUM ? num_to_py(num.kth(i)) : obj.kth(i);
    }
    // the k-th value as a Num when the keys are numeric
    bool kth_num(int64_t i, Num& out) const {
        if (mode == OBJ) return false;
        out = mode == FLT ? Num::of_flt(flt.kth(i)) : num.kth(i);
        return true;
    }
    // fn(python value, count) for every distinct value, smallest first
    template <class Fn> void for_each(Fn&& fn) const {
        if (gone) [[unlikely]]
            cleared(kWho, "multiset");
        if (mode == FLT) flt.for_each([&](double k, int64_t c) { fn(nb::steal(PyFloat_FromDouble(k)), c); });
        else if (mode == NUM) num.for_each([&](const Num& k, int64_t c) { fn(num_to_py(k), c); });
        else obj.for_each([&](const nb::object& k, int64_t c) { fn(k, c); });
    }
    std::string check() {
        if (gone) [[unlikely]]
            cleared(kWho, "multiset");
        if (mode != OBJ) return mode == FLT ? flt.check() : num.check();
        Op op(*this, Access::Read);  // the check compares (Python code)
        return obj.check();
    }
};

struct OSObj {
    OS s;

    // cyclic GC (gc.hpp): object keys (after the first non-number) are Python references
    void traverse(GcVisit& v) const { s.traverse(v); }
    void clear() { s.clear(); }
};

// Nearest rank, as DuckDB's quantile_disc: index max(ceil(q * n) - 1, 0).
int64_t nearest_rank(double q, int64_t n) {
    auto idx = static_cast<int64_t>(std::ceil(q * static_cast<double>(n))) - 1;
    return idx < 0 ? 0 : idx;
}

double check_q(PyObject* o) {
    double q = PyFloat_AsDouble(o);
    if (q == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        raise_builtin(PyExc_TypeError, std::string(kWho) + ".quantile needs q as a real number in [0, 1] (or a "
                                                           "sequence of them), got " + std::string(Py_TYPE(o)->tp_name));
    }
    if (!(q >= 0.0 && q <= 1.0))
        raise_builtin(PyExc_ValueError, std::string(kWho) + ".quantile needs 0 <= q <= 1, got " + repr_str(o));
    return q;
}

// q (one number: scalar=true) or a sequence of them.
std::vector<double> read_qs(nb::handle q, bool& scalar) {
    PyObject* o = q.ptr();
    scalar = PyFloat_Check(o) || PyLong_Check(o);
    std::vector<double> qs;
    if (scalar) {
        qs.push_back(check_q(o));
        return qs;
    }
    Values v(q, std::string(kWho) + ".quantile");
    for (std::size_t i = 0; i < v.n; ++i) {
        nb::object x = v.object(i);
        qs.push_back(check_q(x.ptr()));
    }
    return qs;
}

void need_values(const OS& s, const char* op) {
    if (!s.size()) raise("EmptyWindowError", std::string(kWho) + "." + op + " on an empty multiset; insert values first");
}

[[noreturn]] void missing(nb::handle x, const std::string& where) {
    raise("MissingValueError", std::string(kWho) + where + ": " + repr_str(x) +
                                   " is not in the multiset; evict only values that were inserted");
}

// insert / evict / quantile as plain method descriptors (fast_methods.hpp): the per-event
// hot path of single calls. Same behaviour as the nanobind definitions they replace.
PyObject* fast_insert(PyObject* self, PyObject* x) {
    return guarded_call([&]() -> PyObject* {
        OSObj* o = self_ptr<OSObj>(self);
        if (!o) return nullptr;
        o->s.insert(x);
        Py_RETURN_NONE;
    });
}
PyObject* fast_evict(PyObject* self, PyObject* x) {
    return guarded_call([&]() -> PyObject* {
        OSObj* o = self_ptr<OSObj>(self);
        if (!o) return nullptr;
        if (!o->s.erase(x)) missing(x, ".evict");
        Py_RETURN_NONE;
    });
}
PyObject* fast_quantile(PyObject* self, PyObject* q) {
    return guarded_call([&]() -> PyObject* {
        OSObj* o = self_ptr<OSObj>(self);
        if (!o) return nullptr;
        if (PyFloat_CheckExact(q)) {  // one float: no vector
            double x = PyFloat_AS_DOUBLE(q);
            if (!(x >= 0.0 && x <= 1.0)) check_q(q);
            need_values(o->s, "quantile()");
            return o->s.kth(nearest_rank(x, o->s.size())).release().ptr();
        }
        bool scalar;
        std::vector<double> qs = read_qs(q, scalar);
        need_values(o->s, "quantile()");
        int64_t n = o->s.size();
        if (scalar) return o->s.kth(nearest_rank(qs[0], n)).release().ptr();
        nb::list out;
        for (double v : qs) out.append(o->s.kth(nearest_rank(v, n)));
        return out.release().ptr();
    });
}
PyMethodDef fast_defs[3] = {
    {"insert", (PyCFunction)fast_insert, METH_O, "insert(x): add one value. O(log n)."},
    {"evict", (PyCFunction)fast_evict, METH_O,
     "evict(x): remove one value equal to x (MissingValueError if none). O(log n)."},
    {"quantile", (PyCFunction)fast_quantile, METH_O,
     "quantile(q): nearest-rank quantile(s), as DuckDB's quantile_disc. O(m log n)."},
};

// The 0-based ranks of kth_slices: an int64 buffer of shape (r,) or (r, m), or a sequence
// of r ints or of r sequences of m ints. `per` is m, `nested` says whether answers come
// back per window as lists.
struct Ranks {
    std::vector<int64_t> k;
    std::size_t per = 1;
    bool nested = false;

    Ranks(nb::handle obj, std::size_t r, const std::string& who) {
        PyObject* o = obj.ptr();
        Py_buffer view{};
        if (PyObject_CheckBuffer(o) && PyObject_GetBuffer(o, &view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) == 0) {
            char kind = buffer_kind(view, true);
            int ndim = view.ndim;
            std::size_t rows = ndim >= 1 && view.shape ? static_cast<std::size_t>(view.shape[0]) : 0;
            std::size_t cols = ndim == 2 && view.shape ? static_cast<std::size_t>(view.shape[1]) : 1;
            if (kind == 'q' && (ndim == 1 || ndim == 2) && rows == r) {
                k.assign(static_cast<const int64_t*>(view.buf), static_cast<const int64_t*>(view.buf) + r * cols);
                per = cols;
                nested = ndim == 2;
                PyBuffer_Release(&view);
                return;
            }
            PyBuffer_Release(&view);
            raise("ArgumentTypeError", who + " needs ranks as an int64 array of shape (windows,) or (windows, m) "
                                             "with one row per window (" + std::to_string(r) + ")");
        }
        PyErr_Clear();
        nb::object t = nb::steal(PySequence_Tuple(o));
        if (!t.is_valid()) {
            PyErr_Clear();
            raise("ArgumentTypeError", who + " needs ranks as a sequence or an int64 array, got " +
                                               std::string(Py_TYPE(o)->tp_name));
        }
        if (static_cast<std::size_t>(PyTuple_GET_SIZE(t.ptr())) != r)
            raise("ArgumentError", who + ": " + std::to_string(PyTuple_GET_SIZE(t.ptr())) + " rows of ranks for " +
                                       std::to_string(r) + " windows; give one per window");
        for (std::size_t i = 0; i < r; ++i) {
            PyObject* row = PyTuple_GET_ITEM(t.ptr(), static_cast<Py_ssize_t>(i));
            if (PyLong_Check(row) || PyBool_Check(row) || PyIndex_Check(row)) {
                if (nested) raise("ArgumentError", who + ": rank row " + std::to_string(i) + " is a number among sequences");
                k.push_back(index_arg(row, who, "rank"));
                continue;
            }
            std::vector<int64_t> ks = read_indices(row, who, "ranks");
            if (i == 0) { per = ks.size(); nested = true; }
            if (!nested || ks.size() != per)
                raise("ArgumentError", who + ": rank row " + std::to_string(i) + " has " + std::to_string(ks.size()) +
                                           " ranks; give every window the same number");
            k.insert(k.end(), ks.begin(), ks.end());
        }
    }
};

// Rank j of window i (of `size` values), checked.
inline int64_t checked_rank(int64_t k, std::size_t i, int64_t size, const std::string& who) {
    if (k < 0 || k >= size)
        raise("EmptyWindowError", who + ": window " + std::to_string(i) + " holds " + std::to_string(size) +
                                      " values and has no rank " + std::to_string(k) + "; ranks must be between 0 and "
                                      "its size - 1");
    return k;
}

// values[lo[i]:hi[i]] slid through a scratch multiset (each value inserted and removed at
// most once; a window starting at or after the end of what is held starts afresh), and
// for every window i and j < per: out slot i * per + j = kth(rank(i, j, size)). `self` is
// neither read nor changed. A value that cannot be ordered (NaN) raises ValueOrderError.
template <class RankFn>
void select_slices(const Values& v, const Slices& s, std::size_t per, RankFn&& rank, Out& out,
                   nb::list* rows, const std::string& who) {
    OS w;
    int64_t held_lo = 0, held_hi = 0;
    auto add = [&](std::size_t at) {
        if (v.kind == Values::F64) w.insert_num(Num::of_flt(v.f64[at]));
        else if (v.kind == Values::I64) w.insert_num(Num::of_int(v.i64[at]));
        else w.insert(v.item(at));
    };
    auto drop = [&](std::size_t at) {
        bool ok;
        if (v.kind == Values::F64) ok = w.erase_num(Num::of_flt(v.f64[at]));
        else if (v.kind == Values::I64) ok = w.erase_num(Num::of_int(v.i64[at]));
        else ok = w.erase(v.item(at));
        if (!ok) missing(v.object(at), who.substr(std::string(kWho).size()));
    };
    for (std::size_t i = 0; i < s.r; ++i) {
        int64_t a = s.lo[i], b = s.hi[i];
        if (a >= held_hi) {
            if (held_hi > held_lo) w = OS();
            held_lo = held_hi = a;
        }
        for (; held_hi < b; ++held_hi) add(static_cast<std::size_t>(held_hi));
        for (; held_lo < a; ++held_lo) drop(static_cast<std::size_t>(held_lo));
        int64_t n = b - a;
        if (rows) {  // answers as lists, one per window
            nb::list row;
            for (std::size_t j = 0; j < per; ++j) row.append(w.kth(rank(i, j, n)));
            rows->append(row);
            continue;
        }
        for (std::size_t j = 0; j < per; ++j) {
            int64_t idx = rank(i, j, n);
            Num k;
            if (out.kind != Out::LIST && w.kth_num(idx, k)) out.put_num(i * per + j, k);
            else out.put_object(i * per + j, w.kth(idx));
        }
    }
}

// select_slices without the GIL, for float64 values into a float64 out buffer (the
// windows engine's exact quantiles, run on several threads: issue 40): the same slide over
// a float tree, the multiset's FLT form (the same keys, ranks and answers). Runs no Python
// code: the bounds are Slices' copies, the ranks checked copies (Ranks) or computed here,
// x and out buffers held for the call. False at the first NaN or a value that is not found
// again (another thread wrote to x meanwhile): the caller starts over with the GIL, where
// select_slices raises as it does. The tree holds b - a values at every window (one insert
// per value added, one successful erase per value dropped), so every checked rank is in it.
template <class RankFn>
bool select_slices_nogil(const double* x, const Slices& s, std::size_t per, RankFn&& rank, double* out) {
    windowagg::OrderStatistics<double, FltLess> w;
    int64_t held_lo = 0, held_hi = 0;
    for (std::size_t i = 0; i < s.r; ++i) {
        int64_t a = s.lo[i], b = s.hi[i];
        if (a >= held_hi) {
            if (held_hi > held_lo) w = windowagg::OrderStatistics<double, FltLess>();
            held_lo = held_hi = a;
        }
        for (; held_hi < b; ++held_hi) {
            double xi = x[static_cast<std::size_t>(held_hi)];
            if (std::isnan(xi)) return false;
            w.insert(xi);
        }
        for (; held_lo < a; ++held_lo) {
            double xi = x[static_cast<std::size_t>(held_lo)];
            if (std::isnan(xi) || !w.erase(xi)) return false;
        }
        int64_t n = b - a;
        for (std::size_t j = 0; j < per; ++j) out[i * per + j] = w.kth(rank(i, j, n));
    }
    return true;
}

// select_slices, first without the GIL where the values and out are float64 buffers.
template <class RankFn>
void select_slices_any(const Values& v, const Slices& s, std::size_t per, RankFn&& rank, Out& out,
                       nb::list* rows, const std::string& who) {
    if (v.kind == Values::F64 && out.kind == Out::F64 && !rows) {
        bool done;
        {
            nb::gil_scoped_release release;
            done = select_slices_nogil(v.f64, s, per, rank, out.f64);
        }
        if (done) return;
    }
    select_slices(v, s, per, rank, out, rows, who);
}

// slide's `evict`: one sequence of values (or None) per step, or, read in place, a float64 /
// int64 buffer of shape (steps,) (one value per step) or (steps, k) (k values per step).
struct Evictions {
    nb::object seq;  // a tuple with one entry per step, when not a buffer
    Py_buffer view{};
    bool has_view = false;
    char kind = 0;  // 'd' / 'q' for a buffer
    std::size_t per = 0;
    const std::string& who;

    Evictions(nb::handle evict, std::size_t steps, const std::string& who_) : who(who_) {
        PyObject* o = evict.ptr();
        std::size_t got = 0;
        if (PyObject_CheckBuffer(o) && !PyBytes_Check(o) && !PyByteArray_Check(o)) {
            if (PyObject_GetBuffer(o, &view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) == 0) {
                kind = buffer_kind(view, true);
                if (kind && view.ndim <= 2 && view.shape) {
                    has_view = true;
                    got = static_cast<std::size_t>(view.shape[0]);
                    per = view.ndim == 2 ? static_cast<std::size_t>(view.shape[1]) : 1;
                } else {
                    PyBuffer_Release(&view);
                    kind = 0;
                }
            } else {
                PyErr_Clear();
            }
        }
        if (!has_view) {
            seq = nb::steal(PySequence_Tuple(o));
            if (!seq.is_valid()) {
                PyErr_Clear();
                raise_builtin(PyExc_TypeError, who + ": evict must be a sequence with one sequence of values per "
                                                     "step, or a float64/int64 array of shape (steps,) or (steps, k)");
            }
            got = static_cast<std::size_t>(PyTuple_GET_SIZE(seq.ptr()));
        }
        if (got != steps)
            raise_builtin(PyExc_ValueError, who + ": " + std::to_string(got) + " evict sets for " +
                                                std::to_string(steps) + " values; give one per value");
    }
    ~Evictions() {
        if (has_view) PyBuffer_Release(&view);
    }
    Evictions(const Evictions&) = delete;
    Evictions& operator=(const Evictions&) = delete;

    // Step i's evictions from s, whose last insert was values[i]. A value not in s undoes the
    // step (the evictions before it and that insert) and raises MissingValueError.
    void apply(OS& s, std::size_t i, const Values& values) const {
        if (has_view) {
            auto at_key = [&](std::size_t at) {
                return kind == 'd' ? Num::of_flt(static_cast<const double*>(view.buf)[at])
                                   : Num::of_int(static_cast<const int64_t*>(view.buf)[at]);
            };
            for (std::size_t j = 0; j < per; ++j) {
                std::size_t at = i * per + j;
                Num k = at_key(at);
                auto undo = [&] {  // this step's evictions before j, then its insert
                    for (std::size_t u = i * per; u < at; ++u) s.insert_num(at_key(u));
                    s.erase(values.object(i));
                };
                bool ok;
                try {
                    ok = s.erase_num(k);
                } catch (...) {  // NaN (ValueOrderError): nothing was erased
                    undo();
                    throw;
                }
                if (ok) continue;
                undo();
                missing(num_to_py(k), ".slide (step " + std::to_string(i) + ")");
            }
            return;
        }
        PyObject* e = PyTuple_GET_ITEM(seq.ptr(), static_cast<Py_ssize_t>(i));
        if (e == Py_None) return;
        Values gone(e, who);
        for (std::size_t j = 0; j < gone.n; ++j) {
            auto undo = [&] {
                for (std::size_t u = 0; u < j; ++u) s.insert(gone.object(u));
                s.erase(values.object(i));
            };
            bool ok;
            try {
                if (gone.kind == Values::F64) ok = s.erase_num(Num::of_flt(gone.f64[j]));
                else if (gone.kind == Values::I64) ok = s.erase_num(Num::of_int(gone.i64[j]));
                else ok = s.erase(gone.item(j));
            } catch (...) {  // NaN, or a comparison that raised: nothing was erased
                undo();
                throw;
            }
            if (!ok) {
                nb::object x = gone.object(j);
                undo();
                missing(x, ".slide (step " + std::to_string(i) + ")");
            }
        }
    }
};

}  // namespace

void bind_order_statistics(nb::module_& m) {
    nb::class_<OSObj> cls(m, "OrderStatistics", nb::type_slots(gc_slots<OSObj>));
    cls
        .def(nb::init<>())
        .def("insert", [](OSObj& o, nb::handle x) { o.s.insert(x); }, nb::arg("x").none(),
             "Add one value. O(log n).")
        .def("evict", [](OSObj& o, nb::handle x) {
            if (!o.s.erase(x)) missing(x, ".evict");
        }, nb::arg("x").none(), "Remove one value equal to x (MissingValueError if none). O(log n).")
        .def("rank", [](OSObj& o, nb::handle x) { return o.s.rank(x); }, nb::arg("x").none(),
             "How many values are < x. O(log n).")
        .def("kth", [](OSObj& o, nb::handle k) {
            int64_t i = index_arg(k.ptr(), std::string(kWho) + ".kth", "index");
            int64_t n = o.s.size();
            if (i < 0 || i >= n)
                raise("EmptyWindowError", std::string(kWho) + ".kth(" + std::to_string(i) + ") on " + std::to_string(n) +
                                              " values; k must be between 0 and len - 1");
            return o.s.kth(i);
        }, nb::arg("k").none(), "The k-th smallest value (0-based). O(log n).")
        .def("quantile", [](OSObj& o, nb::handle q) -> nb::object {
            bool scalar;
            std::vector<double> qs = read_qs(q, scalar);
            need_values(o.s, "quantile()");
            int64_t n = o.s.size();
            if (scalar) return o.s.kth(nearest_rank(qs[0], n));
            nb::list out;
            for (double x : qs) out.append(o.s.kth(nearest_rank(x, n)));
            return out;
        }, nb::arg("q").none(), "Nearest-rank quantile(s), as DuckDB's quantile_disc. O(m log n).")
        .def("__len__", [](OSObj& o) { return o.s.size(); })
        .def("__iter__", [](OSObj& o) {
            nb::list l;
            o.s.for_each([&](const nb::object& v, int64_t c) {
                for (int64_t j = 0; j < c; ++j) l.append(v);
            });
            return nb::steal(PyObject_GetIter(l.ptr()));
        })
        .def("_check", [](OSObj& o) {
            std::string e = o.s.check();
            if (!e.empty()) {
                nb::object cls = nb::module_::import_("windowagg.fifo._common").attr("InvariantError");
                PyErr_SetString(cls.ptr(), (std::string(kWho) + ": invariant broken: " + e).c_str());
                throw nb::python_error();
            }
        })
        .def_prop_ro("_generic", [](OSObj& o) { return o.s.generic(); })
        .def("__repr__", [](OSObj& o) {
            if (o.s.gone) return "<" + std::string(kWho) + " cleared by the garbage collector>";
            return std::string(kWho) + "(n=" + std::to_string(o.s.size()) + ")";
        })
        .def("bulk_insert", [](OSObj& o, nb::handle values) {
            Values v(values, std::string(kWho) + ".bulk_insert");
            for (std::size_t i = 0; i < v.n; ++i) {
                if (v.kind == Values::F64) o.s.insert_num(Num::of_flt(v.f64[i]));
                else if (v.kind == Values::I64) o.s.insert_num(Num::of_int(v.i64[i]));
                else o.s.insert(v.item(i));
            }
        }, nb::arg("values").none(), "insert() every value. O(m log n).")
        .def("bulk_evict", [](OSObj& o, nb::handle values) {
            // evict() every value, all or nothing: a missing or unordered value puts back
            // what this call evicted and raises as evict() does
            Values v(values, std::string(kWho) + ".bulk_evict");
            auto erase_at = [&](std::size_t i) {
                if (v.kind == Values::F64) return o.s.erase_num(Num::of_flt(v.f64[i]));
                if (v.kind == Values::I64) return o.s.erase_num(Num::of_int(v.i64[i]));
                return o.s.erase(v.item(i));
            };
            auto put_back = [&](std::size_t upto) {
                for (std::size_t j = 0; j < upto; ++j) {
                    if (v.kind == Values::F64) o.s.insert_num(Num::of_flt(v.f64[j]));
                    else if (v.kind == Values::I64) o.s.insert_num(Num::of_int(v.i64[j]));
                    else o.s.insert(v.item(j));
                }
            };
            for (std::size_t i = 0; i < v.n; ++i) {
                bool ok;
                try {
                    ok = erase_at(i);
                } catch (...) {
                    put_back(i);
                    throw;
                }
                if (!ok) {
                    nb::object x = v.object(i);
                    put_back(i);
                    missing(x, ".bulk_evict");
                }
            }
        }, nb::arg("values").none(), "evict() every value, all or nothing. O(m log n).")
        .def("slide", [](OSObj& o, nb::handle values, nb::handle evict, nb::handle q, nb::handle out) -> nb::object {
            std::string who = std::string(kWho) + ".slide";
            Values v(values, who);
            Evictions ev(evict, v.n, who);
            bool scalar;
            std::vector<double> qs = read_qs(q, scalar);
            std::size_t mq = qs.size();
            Out res(out, v.n * mq, who, true);
            nb::list rows;
            for (std::size_t i = 0; i < v.n; ++i) {
                if (v.kind == Values::F64) o.s.insert_num(Num::of_flt(v.f64[i]));
                else if (v.kind == Values::I64) o.s.insert_num(Num::of_int(v.i64[i]));
                else o.s.insert(v.item(i));
                ev.apply(o.s, i, v);
                int64_t n = o.s.size();
                if (!n) raise("EmptyWindowError", who + ": step " + std::to_string(i) + " leaves the multiset empty");
                if (res.kind == Out::LIST && !scalar) {
                    nb::list row;
                    for (double x : qs) row.append(o.s.kth(nearest_rank(x, n)));
                    rows.append(row);
                    continue;
                }
                for (std::size_t j = 0; j < mq; ++j) {
                    int64_t idx = nearest_rank(qs[j], n);
                    Num k;
                    if (res.kind != Out::LIST && o.s.kth_num(idx, k)) res.put_num(i * mq + j, k);
                    else res.put_object(i * mq + j, o.s.kth(idx));
                }
            }
            if (res.kind != Out::LIST) return nb::borrow(out);
            return scalar ? nb::object(res.list) : nb::object(rows);
        }, nb::arg("values").none(), nb::arg("evict").none(), nb::arg("q").none(), nb::arg("out").none() = nb::none(),
           "Per step: insert values[i], evict the values in evict[i] (a sequence per step, or a float64/int64 "
           "array of shape (steps,) or (steps, k)), record the quantile(s) q.");
    cls.def("kth_slices", [](OSObj&, nb::handle values, nb::handle lo, nb::handle hi, nb::handle ranks,
                             nb::handle out) -> nb::object {
        std::string who = std::string(kWho) + ".kth_slices";
        Values v(values, who);
        Slices s(lo, hi, v.n, who);
        Ranks rk(ranks, s.r, who);
        for (std::size_t i = 0; i < s.r; ++i)
            for (std::size_t j = 0; j < rk.per; ++j) checked_rank(rk.k[i * rk.per + j], i, s.hi[i] - s.lo[i], who);
        Out res(out, s.r * rk.per, who, true);
        bool lists = res.kind == Out::LIST && rk.nested;
        nb::list rows;
        auto rank = [&](std::size_t i, std::size_t j, int64_t) { return rk.k[i * rk.per + j]; };
        select_slices_any(v, s, rk.per, rank, res, lists ? &rows : nullptr, who);
        if (res.kind != Out::LIST) return nb::borrow(out);
        return lists ? nb::object(rows) : nb::object(res.list);
    }, nb::arg("values").none(), nb::arg("lo").none(), nb::arg("hi").none(), nb::arg("ranks").none(),
       nb::arg("out").none() = nb::none(),
       "Per window i: the ranks[i]-th smallest (0-based; a row of ranks gives several) of values[lo[i]:hi[i]] "
       "(bounds non-decreasing). This multiset is neither read nor changed.");
    cls.def("quantile_slices", [](OSObj&, nb::handle values, nb::handle lo, nb::handle hi, nb::handle q,
                                  nb::handle out) -> nb::object {
        std::string who = std::string(kWho) + ".quantile_slices";
        Values v(values, who);
        Slices s(lo, hi, v.n, who);
        bool scalar;
        std::vector<double> qs = read_qs(q, scalar);
        for (std::size_t i = 0; i < s.r; ++i)
            if (s.hi[i] == s.lo[i])
                raise("EmptyWindowError", who + ": window " + std::to_string(i) + " ([" + std::to_string(s.lo[i]) +
                                              ", " + std::to_string(s.hi[i]) + ")) holds no value; it has no quantile");
        Out res(out, s.r * qs.size(), who, true);
        bool lists = res.kind == Out::LIST && !scalar;
        nb::list rows;
        auto rank = [&](std::size_t, std::size_t j, int64_t n) { return nearest_rank(qs[j], n); };
        select_slices_any(v, s, qs.size(), rank, res, lists ? &rows : nullptr, who);
        if (res.kind != Out::LIST) return nb::borrow(out);
        return lists ? nb::object(rows) : nb::object(res.list);
    }, nb::arg("values").none(), nb::arg("lo").none(), nb::arg("hi").none(), nb::arg("q").none(),
       nb::arg("out").none() = nb::none(),
       "Per window i: the nearest-rank quantile(s) q of values[lo[i]:hi[i]] (bounds non-decreasing), as "
       "quantile(). This multiset is neither read nor changed.");
    for (PyMethodDef& d : fast_defs) install_method(cls, &d);
}
