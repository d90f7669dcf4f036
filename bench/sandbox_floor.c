/* The kernel floor of a sandbox start, for bench/sandbox_start.sh and bench/peers.py.
 *
 * Does only what no sandbox with Anvil's isolation can skip, and nothing else: one static
 * process creates new user, mount, pid, ipc and network namespaces (clone3), the child maps
 * its own uid/gid, then either starts the command from a pid-1 init that waits for it (the
 * shape of `anvil sandbox` and of bubblewrap's --unshare-pid) or, with --no-init, becomes the
 * command itself. No mount is made, no Landlock ruleset and no seccomp filter is installed,
 * nothing is reported: a real sandbox costs more than this. The bench prints this beside
 * bubblewrap so that a start-up target can be checked against what the kernel and the
 * machine allow at all (on a VM where every process creation and page fault is expensive,
 * the floor alone can be more than half of bubblewrap's run).
 *
 *   sandbox_floor [--no-init] PROGRAM [ARG...]
 *
 * Exit status: the command's, 125 when a step failed (with a message on stderr). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static int write_file(const char *path, const char *text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = write(fd, text, strlen(text));
  close(fd);
  return n == (ssize_t)strlen(text) ? 0 : -1;
}

static int exit_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + WTERMSIG(status);
}

int main(int argc, char **argv) {
  int arg = 1, init = 1;
  if (arg < argc && strcmp(argv[arg], "--no-init") == 0) {
    init = 0;
    ++arg;
  }
  if (arg >= argc) {
    fprintf(stderr, "usage: sandbox_floor [--no-init] PROGRAM [ARG...]\n");
    return 125;
  }
  uid_t uid = geteuid();
  gid_t gid = getegid();
  struct clone_args ca;
  memset(&ca, 0, sizeof ca);
  ca.flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWNET;
  ca.exit_signal = SIGCHLD;
  long pid = syscall(SYS_clone3, &ca, sizeof ca);
  if (pid < 0) {
    fprintf(stderr, "sandbox_floor: clone3: %s\n", strerror(errno));
    return 125;
  }
  if (pid == 0) {
    char map[64];
    if (write_file("/proc/self/setgroups", "deny") != 0) _exit(125);
    snprintf(map, sizeof map, "%u %u 1", (unsigned)uid, (unsigned)uid);
    if (write_file("/proc/self/uid_map", map) != 0) _exit(125);
    snprintf(map, sizeof map, "%u %u 1", (unsigned)gid, (unsigned)gid);
    if (write_file("/proc/self/gid_map", map) != 0) _exit(125);
    if (!init) {
      execv(argv[arg], argv + arg);
      _exit(127);
    }
    pid_t command = vfork();
    if (command == 0) {
      execv(argv[arg], argv + arg);
      _exit(127);
    }
    if (command < 0) _exit(125);
    int status = 0;
    while (waitpid(command, &status, 0) < 0 && errno == EINTR) {
    }
    _exit(exit_code(status));
  }
  int status = 0;
  while (waitpid((pid_t)pid, &status, 0) < 0 && errno == EINTR) {
  }
  return exit_code(status);
}
