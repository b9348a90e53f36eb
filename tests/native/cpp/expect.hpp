// EXPECT(c) for the header tests: report a failed check with its line and go on; give up
// after 20 failures. `failures` is the exit status's source (main returns failures != 0).
#pragma once

#include <cstdio>
#include <cstdlib>

static int failures = 0;
#define EXPECT(c)                                                                \
    do {                                                                         \
        if (!(c)) {                                                              \
            std::fprintf(stderr, "%s:%d: failed: %s\n", __FILE__, __LINE__, #c); \
            if (++failures > 20) std::exit(1);                                   \
        }                                                                        \
    } while (0)
