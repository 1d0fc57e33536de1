#ifndef LOOM_TESTING_SANITIZERS_H_
#define LOOM_TESTING_SANITIZERS_H_

// Test-only: which sanitizer this build runs under (g++ defines __SANITIZE_*__, clang
// answers __has_feature). Tests use it to shorten runs whose length only checks learning
// quality (the Release build checks that; a sanitizer checks the code paths, which a short
// run covers) and to skip what a sanitizer cannot run faithfully.
namespace loom::testing {

#if defined(__has_feature)
#define LOOM_HAS_FEATURE_(x) __has_feature(x)
#else
#define LOOM_HAS_FEATURE_(x) 0
#endif

#if defined(__SANITIZE_ADDRESS__) || LOOM_HAS_FEATURE_(address_sanitizer)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif

#if defined(__SANITIZE_THREAD__) || LOOM_HAS_FEATURE_(thread_sanitizer)
inline constexpr bool kThreadSanitizer = true;
#else
inline constexpr bool kThreadSanitizer = false;
#endif

#undef LOOM_HAS_FEATURE_

// True under ASan (the CI sanitizer build also runs UBSan) or TSan.
inline constexpr bool kSanitizerBuild = kAddressSanitizer || kThreadSanitizer;

}  // namespace loom::testing

#endif  // LOOM_TESTING_SANITIZERS_H_
