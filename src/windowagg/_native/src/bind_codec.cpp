// _core.dumps_number_rows and _core.loads_number_rows: the compiled twins of
// windowagg.codec.dumps_numbers and loads_numbers for rows that are tuples of floats and ints
// (a pane's partials, written and read as pieces many times per micro-batch). The record
// format is docs/formats.md's, byte for byte as the Python codec writes and reads it; a row
// the encoder does not take (another type, a bool, an int outside int64, 128 items or more)
// comes back as None, for the Python codec to write, and so does a record the decoder does
// not read (any other data, a bad checksum, an int of more than 8 bytes), for the Python
// codec to read or refuse.
//
// No Python code runs inside (exact type checks, no __index__ or __float__); the list is
// read at its current length at every step and each item held while it is read; the GIL is
// held throughout.
#include <nanobind/nanobind.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <string>

#include "py_errors.hpp"

namespace nb = nanobind;
using namespace windowagg::py;

namespace {

// CRC-32 (IEEE 802.3, reflected, as zlib.crc32), one table built at compile time.
constexpr std::array<std::uint32_t, 256> crc_table() {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
        std::uint32_t c = i;
        for (int k = 0; k < 8; ++k) c = (c & 1U) ? 0xEDB88320U ^ (c >> 1) : c >> 1;
        t[i] = c;
    }
    return t;
}
constexpr auto kCrc = crc_table();

std::uint32_t crc32(const unsigned char* p, std::size_t n) {
    std::uint32_t c = 0xFFFFFFFFU;
    for (std::size_t i = 0; i < n; ++i) c = kCrc[(c ^ p[i]) & 0xFFU] ^ (c >> 8);
    return c ^ 0xFFFFFFFFU;
}

constexpr char kTuple = 0x74;  // the codec's tags (windowagg/_codec_format.py)
constexpr char kFloat = 0x66;
constexpr char kInt = 0x69;

// Append `row`'s encoding (a tuple of floats and ints) to `buf`; false (buf then holds a
// partial body, which the caller drops) when the Python codec must write it.
bool put_row(PyObject* row, std::string& buf) {
    if (!PyTuple_CheckExact(row)) return false;
    Py_ssize_t k = PyTuple_GET_SIZE(row);
    if (k >= 0x80) return false;  // a one-byte length only
    buf.push_back(kTuple);
    buf.push_back(static_cast<char>(k));
    for (Py_ssize_t i = 0; i < k; ++i) {
        PyObject* x = PyTuple_GET_ITEM(row, i);
        if (PyFloat_CheckExact(x)) {  // "f" + the IEEE 754 bits, big-endian (struct ">d")
            double d = PyFloat_AS_DOUBLE(x);
            std::uint64_t u;
            std::memcpy(&u, &d, sizeof u);
            buf.push_back(kFloat);
            for (int s = 56; s >= 0; s -= 8) buf.push_back(static_cast<char>((u >> s) & 0xFFU));
        } else if (PyLong_CheckExact(x)) {  // "i" n + to_bytes(n, "big", signed=True)
            int overflow = 0;
            long long v = PyLong_AsLongLongAndOverflow(x, &overflow);
            if (overflow != 0) return false;  // past int64: the Python codec
            if (v == -1 && PyErr_Occurred()) {
                PyErr_Clear();
                return false;
            }
            std::uint64_t mag = v < 0 ? std::uint64_t{0} - static_cast<std::uint64_t>(v)
                                      : static_cast<std::uint64_t>(v);
            int bits = mag == 0 ? 0 : 64 - __builtin_clzll(mag);  // int.bit_length()
            int n = (bits + 8) >> 3;                                 // 1..9 bytes
            buf.push_back(kInt);
            buf.push_back(static_cast<char>(n));
            auto u = static_cast<std::uint64_t>(v);
            for (int j = n - 1; j >= 0; --j) {
                unsigned char b = j >= 8 ? (v < 0 ? 0xFFU : 0x00U)  // the sign's 9th byte
                                         : static_cast<unsigned char>((u >> (8 * j)) & 0xFFU);
                buf.push_back(static_cast<char>(b));
            }
        } else {
            return false;
        }
    }
    return true;
}

nb::list dumps_number_rows(nb::bytes head, nb::handle rows) {
    if (!PyList_CheckExact(rows.ptr())) {
        raise_builtin(PyExc_TypeError, "dumps_number_rows: rows must be a list");
    }
    const auto* h = static_cast<const unsigned char*>(head.data());
    std::size_t hn = head.size();
    nb::list out;
    std::string buf;
    buf.reserve(hn + 256);
    // the length read at every step and the row held: robust even if something ran between
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(rows.ptr()); ++i) {
        nb::object row = nb::borrow(PyList_GET_ITEM(rows.ptr(), i));
        buf.assign(reinterpret_cast<const char*>(h), hn);
        if (!put_row(row.ptr(), buf)) {
            out.append(nb::none());
            continue;
        }
        std::uint32_t c = crc32(reinterpret_cast<const unsigned char*>(buf.data()), buf.size());
        for (int s = 24; s >= 0; s -= 8) buf.push_back(static_cast<char>((c >> s) & 0xFFU));
        out.append(nb::bytes(buf.data(), buf.size()));
    }
    return out;
}

// The row of one record `d` (n bytes) whose first h bytes must be `head`; nullptr (no error
// set) when the Python codec must read it. Bounds: every read is checked against `end`, the
// start of the 4-byte checksum.
PyObject* read_row(const unsigned char* d, std::size_t n, const unsigned char* head, std::size_t h) {
    if (n < h + 2 + 4 || std::memcmp(d, head, h) != 0) return nullptr;
    std::size_t end = n - 4;
    if (d[h] != static_cast<unsigned char>(kTuple) || d[h + 1] >= 0x80) return nullptr;
    std::uint32_t stored = (std::uint32_t{d[end]} << 24) | (std::uint32_t{d[end + 1]} << 16) |
                           (std::uint32_t{d[end + 2]} << 8) | std::uint32_t{d[end + 3]};
    if (crc32(d, end) != stored) return nullptr;
    std::size_t k = d[h + 1];
    nb::object row = nb::steal(PyTuple_New(static_cast<Py_ssize_t>(k)));
    if (!row.is_valid()) throw nb::python_error();
    std::size_t p = h + 2;
    for (std::size_t i = 0; i < k; ++i) {
        if (p >= end) return nullptr;
        PyObject* item = nullptr;
        if (d[p] == static_cast<unsigned char>(kFloat) && p + 9 <= end) {
            std::uint64_t u = 0;
            for (int j = 1; j <= 8; ++j) u = (u << 8) | d[p + j];
            double x;
            std::memcpy(&x, &u, sizeof x);
            item = PyFloat_FromDouble(x);
            p += 9;
        } else if (d[p] == static_cast<unsigned char>(kInt) && p + 1 < end && d[p + 1] <= 8) {
            std::size_t len = d[p + 1];
            if (p + 2 + len > end) return nullptr;
            std::uint64_t u = 0;
            for (std::size_t j = 0; j < len; ++j) u = (u << 8) | d[p + 2 + j];
            if (len > 0 && len < 8 && (d[p + 2] & 0x80U)) u |= ~std::uint64_t{0} << (8 * len);
            std::int64_t v;
            std::memcpy(&v, &u, sizeof v);  // two's complement, sign-extended
            item = PyLong_FromLongLong(v);
            p += 2 + len;
        } else {
            return nullptr;  // another tag, a cut record, an int of more than 8 bytes
        }
        if (item == nullptr) throw nb::python_error();
        PyTuple_SET_ITEM(row.ptr(), static_cast<Py_ssize_t>(i), item);
    }
    if (p != end) return nullptr;
    return row.release().ptr();
}

nb::list loads_number_rows(nb::bytes head, nb::handle datas) {
    if (!PyList_CheckExact(datas.ptr())) {
        raise_builtin(PyExc_TypeError, "loads_number_rows: datas must be a list");
    }
    std::string h(static_cast<const char*>(head.data()), head.size());  // a copy: held here
    const auto* hp = reinterpret_cast<const unsigned char*>(h.data());
    nb::list out;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(datas.ptr()); ++i) {
        nb::object data = nb::borrow(PyList_GET_ITEM(datas.ptr(), i));
        PyObject* row = nullptr;
        if (PyBytes_CheckExact(data.ptr())) {
            const auto* d = reinterpret_cast<const unsigned char*>(PyBytes_AS_STRING(data.ptr()));
            row = read_row(d, static_cast<std::size_t>(PyBytes_GET_SIZE(data.ptr())), hp, h.size());
        }
        if (row == nullptr) {
            out.append(nb::none());
        } else {
            out.append(nb::steal(row));
        }
    }
    return out;
}

}  // namespace

void bind_codec(nb::module_& m) {
    m.def("loads_number_rows", &loads_number_rows, nb::arg("head"), nb::arg("datas"),
          "The row of every record of datas (a list of bytes) that head + a tuple of floats and "
          "ints (of at most 8 bytes) + its CRC-32 makes, as windowagg.codec.loads_numbers reads "
          "it; None for any other data, which the Python codec reads or refuses. O(total size).");
    m.def("dumps_number_rows", &dumps_number_rows, nb::arg("head"), nb::arg("rows"),
          "The codec record head + row + CRC-32 of every row of rows (a list) that is a tuple "
          "of floats and ints (int64), byte for byte as windowagg.codec.dumps_numbers writes "
          "it; None for any other row. O(total size).");
}
