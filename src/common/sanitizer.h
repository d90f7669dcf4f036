// Whether this translation unit is built with a sanitizer (the asan/tsan presets), for the few
// places where a sanitizer's runtime needs room: ANVIL_ASAN (AddressSanitizer) and
// ANVIL_SANITIZED (AddressSanitizer or ThreadSanitizer), each 0 or 1. GCC says so with
// __SANITIZE_*__, clang with __has_feature.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define ANVIL_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ANVIL_ASAN 1
#endif
#endif
#ifndef ANVIL_ASAN
#define ANVIL_ASAN 0
#endif

#if defined(__SANITIZE_THREAD__)
#define ANVIL_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define ANVIL_TSAN 1
#endif
#endif
#ifndef ANVIL_TSAN
#define ANVIL_TSAN 0
#endif

#define ANVIL_SANITIZED (ANVIL_ASAN || ANVIL_TSAN)
