// Sanitizer builds only (CMake ANVIL_SANITIZER_RUNTIME; docs/reliability.md "Sanitizers"): the
// defaults every Anvil binary starts with, because most of them are started by another Anvil
// process with a fixed environment (the plugin host, `anvil run` in the tests, the exec runner),
// so ASAN_OPTIONS from the shell never reaches them. Options in the environment still win.
//
// detect_leaks=0: LeakSanitizer checks at exit by stopping the world with ptrace and reading
// /proc/PID/task, which the locked-down processes cannot do (seccomp, Landlock, no dumpable),
// so it dies with "LeakSanitizer has encountered a fatal error" and turns every clean exit into
// status 1. Leaks in the parsers are what the fuzzers check, with LeakSanitizer on.
//
// quarantine_size_mb=4 (ASan's default is 256): freed memory is held in the quarantine until
// that much has piled up, so a long-running process (anvil serve, the gateway) grows by about the
// quarantine size before its RSS levels off. With 256 MiB it never levelled off in the tests'
// 1000 reloads (serve +97 KiB per reload), which made the RSS bounds of
// T7Serve.ThousandReloadsLeakNoFdsProcessesOrMemory meaningless; with 16 MiB the gateway still
// grew until reload ~800; with 4 MiB both level off by reload ~300 (docs/reliability.md). A
// use-after-free is still caught while the freed chunk is among the last 4 MiB freed.
// scripts/sanitizers.sh sets the same for the processes that inherit the shell's environment.
extern "C" const char* __asan_default_options() { return "detect_leaks=0:quarantine_size_mb=4"; }
