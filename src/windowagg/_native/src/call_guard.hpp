// The re-entrancy and thread guard of the native classes.
//
// Python code runs inside native operations (a user monoid's combine / lift / lower, a
// value's `<`), and that code may call back into the same object, or (the interpreter
// switches threads inside it) another thread may call it. Every entry point therefore
// holds a CallGuard for its whole call:
//
//   * nothing running: the call takes the guard (two stores; the hot path);
//   * the same thread is already inside a call on the object (a callback calling back):
//     a call that changes the object raises windowagg.errors.StateError before touching
//     anything; a read (Access::Read) runs nested, on the object as the outer call left it
//     at the callback (the algorithms run their callbacks where the structure is whole);
//   * another thread is inside a call: this thread waits, with the GIL released, until the
//     object is free, then takes it. Calls from several threads are thus serialised, each
//     one atomic, in some order (Ctrl-C interrupts the wait in the main thread).
//
// The waiting threads of every object share one condition variable: a release with no
// waiter touches nothing shared. A callback that waits for another thread which uses the
// same object deadlocks, as it would with any lock.
#pragma once

#include <nanobind/nanobind.h>
#include <pythread.h>
#if defined(_WIN32)
#ifndef NOMINMAX
#define NOMINMAX
#endif
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>
#else
#include <pthread.h>
#endif

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>

#include "windowagg/ring.hpp"  // WINDOWAGG_NOINLINE

namespace windowagg::py {

namespace nb = nanobind;

[[noreturn]] inline void raise(const char* cls, const std::string& msg);  // py_errors.hpp

enum class Access : bool { Read = false, Write = true };

// This thread's identity, as cheaply as the platform gives it (called once per call).
using ThreadId = std::uintptr_t;
inline ThreadId this_thread() {
#if defined(_WIN32)
    return static_cast<ThreadId>(GetCurrentThreadId());
#else
    return reinterpret_cast<ThreadId>(pthread_self());
#endif
}

struct CallGuard {
    int depth = 0;        // calls running on the object (nested reads included)
    int waiters = 0;      // threads waiting for it
    ThreadId owner = 0;   // this_thread() of the thread running them
};

namespace detail {

struct Waits {
    std::mutex mu;
    std::condition_variable cv;
    std::uint64_t gen = 0;  // bumped by every release that has waiters
};
inline Waits& waits() {
    static Waits* w = new Waits;  // never destroyed: threads may still wait at exit
    return *w;
}
inline void wake_all() {
    Waits& w = waits();
    {
        std::lock_guard<std::mutex> l(w.mu);
        ++w.gen;
    }
    w.cv.notify_all();
}

// Block (GIL released) until g is free; returns with the GIL held and g.depth == 0.
inline void wait_free(CallGuard& g) {
    ++g.waiters;
    struct Done {
        int& w;
        ~Done() { --w; }
    } done{g.waiters};
    Waits& w = waits();
    while (g.depth) {
        std::uint64_t seen;
        {
            std::lock_guard<std::mutex> l(w.mu);
            seen = w.gen;
        }
        // the owner needs the GIL to finish: give it up while waiting
        Py_BEGIN_ALLOW_THREADS {
            std::unique_lock<std::mutex> l(w.mu);
            w.cv.wait_for(l, std::chrono::milliseconds(50), [&] { return w.gen != seen; });
        }
        Py_END_ALLOW_THREADS
        if (PyErr_CheckSignals() < 0) throw nb::python_error();
    }
}

[[noreturn]] inline void refuse_reentry(const char* ns, const char* who, const char* verb) {
    raise("StateError", std::string(ns) + who + "." + verb +
                            ": re-entrant call: this window is in the middle of another call on the same thread "
                            "(its monoid's combine/lift/lower, or a value's comparison, called back into it), and a "
                            "call that changes it cannot run there (reads such as query() and len() can); "
                            "collect the change and apply it after the outer call returns");
}

}  // namespace detail

// Hold g for one call (RAII). ns + who: the class as users name it ("fifo." + "DABA"),
// verb: the method ("insert()"); static strings, read only on the error path.
class Enter {
  public:
    Enter(CallGuard& g, Access a, const char* who, const char* verb, const char* ns = "") : g_(g) {
        if (!g.depth) [[likely]] {
            g.depth = 1;
            g.owner = this_thread();
            return;
        }
        nested_ = busy(g, a, who, verb, ns);
    }
    ~Enter() {
        if (--g_.depth == 0 && g_.waiters) [[unlikely]]
            detail::wake_all();
    }
    Enter(const Enter&) = delete;
    Enter& operator=(const Enter&) = delete;

    // A read running inside another call of the same thread (from one of its callbacks).
    bool nested() const { return nested_; }

  private:
    // g is held: refuse (same thread, a change), nest (same thread, a read: true), or wait.
    WINDOWAGG_NOINLINE static bool busy(CallGuard& g, Access a, const char* who, const char* verb, const char* ns) {
        ThreadId me = this_thread();
        if (g.owner == me) {
            if (a == Access::Write) detail::refuse_reentry(ns, who, verb);
            ++g.depth;
            return true;
        }
        detail::wait_free(g);
        g.depth = 1;
        g.owner = me;
        return false;
    }
    CallGuard& g_;
    bool nested_ = false;
};

// For a read that runs no Python code (len, an end's key): wait while another thread is
// inside a call, then read at once under the GIL (no guard taken).
inline void wait_other_threads(CallGuard& g) {
    if (g.depth && g.owner != this_thread()) [[unlikely]]
        detail::wait_free(g);
}

}  // namespace windowagg::py
