#ifndef LOOM_BASE_THREAD_ANNOTATIONS_H_
#define LOOM_BASE_THREAD_ANNOTATIONS_H_

// Clang's thread-safety annotations (-Wthread-safety), as Abseil's
// base/thread_annotations.h spells them; they expand to nothing under other compilers.
// A member written `Tensor value_ LOOM_GUARDED_BY(mu_);` may only be touched while mu_
// is held, and clang checks every access at compile time. Mutex (mutex.h) is the
// annotated lock; std::mutex is not, so guarded state uses loom::Mutex.
//
//   class Counter {
//    public:
//     void Add(int n) LOOM_LOCKS_EXCLUDED(mu_) { MutexLock lock(mu_); total_ += n; }
//    private:
//     Mutex mu_;
//     int total_ LOOM_GUARDED_BY(mu_) = 0;
//   };
#if defined(__clang__)
#define LOOM_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define LOOM_THREAD_ANNOTATION(x)
#endif

// On a class: its objects are locks (capabilities) named `x` in diagnostics.
#define LOOM_CAPABILITY(x) LOOM_THREAD_ANNOTATION(capability(x))
// On a class: an RAII object that holds a lock for its lifetime.
#define LOOM_SCOPED_CAPABILITY LOOM_THREAD_ANNOTATION(scoped_lockable)
// On a data member: read or written only while `x` is held.
#define LOOM_GUARDED_BY(x) LOOM_THREAD_ANNOTATION(guarded_by(x))
// On a pointer member: the pointee is read or written only while `x` is held.
#define LOOM_PT_GUARDED_BY(x) LOOM_THREAD_ANNOTATION(pt_guarded_by(x))
// On a function: the caller must hold (REQUIRES) / must not hold (LOCKS_EXCLUDED) the locks.
#define LOOM_REQUIRES(...) LOOM_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define LOOM_LOCKS_EXCLUDED(...) LOOM_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
// On a function: it acquires / releases the locks (no argument: `this`).
#define LOOM_ACQUIRE(...) LOOM_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define LOOM_RELEASE(...) LOOM_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
// On a function: it acquires the locks when it returns `result`.
#define LOOM_TRY_ACQUIRE(...) LOOM_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
// On a function: it returns a reference to the lock `x` (so callers may lock it).
#define LOOM_LOCK_RETURNED(x) LOOM_THREAD_ANNOTATION(lock_returned(x))
// On a function: the analysis is off inside it. Say why beside every use.
#define LOOM_NO_THREAD_SAFETY_ANALYSIS LOOM_THREAD_ANNOTATION(no_thread_safety_analysis)

#endif  // LOOM_BASE_THREAD_ANNOTATIONS_H_
