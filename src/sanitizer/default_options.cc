// Sanitizer builds only (CMake ANVIL_SANITIZER_RUNTIME; docs/reliability.md "Sanitizers"): the
// defaults every Anvil binary starts with, because most of them are started by another Anvil
// process with a fixed environment (the plugin host, `anvil run` in the tests, the exec runner),
// so ASAN_OPTIONS from the shell never reaches them. Options in the environment still win.
//
// detect_leaks=0: LeakSanitizer checks at exit by stopping the world with ptrace and reading
// /proc/PID/task, which the locked-down processes cannot do (seccomp, Landlock, no dumpable),
// so it dies with "LeakSanitizer has encountered a fatal error" and turns every clean exit into
// status 1. Leaks in the parsers are what the fuzzers check, with LeakSanitizer on.
extern "C" const char* __asan_default_options() { return "detect_leaks=0"; }
