// doctest runner of the loaders' tests built under AddressSanitizer and UndefinedBehaviorSanitizer
// (loader_tests_sanitized: the loading code's own sources, no torch).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
