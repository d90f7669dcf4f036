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
 * With --layers WS it also applies, in the cheapest form written in C, every layer Anvil's
 * default policy (workspace-write, network none) requires on top of the namespaces: a pids
 * cgroup as root (the kernel exempts uid 0 from RLIMIT_NPROC), entered the way that takes no
 * system-wide lock (cgroup v1: the init writes "0" to `tasks` itself; v2: CLONE_INTO_CGROUP; a
 * move by pid waits for an RCU grace period, whose length depends on what ran before), the
 * mount view (tmpfs root, the runtime roots and WS/.git bound read-only, WS read-write, a
 * minimal /dev, /proc, a private /tmp, pivot_root and detach of the host's tree), a new session,
 * PR_SET_PDEATHSIG, rlimits, no_new_privs, a Landlock ruleset (file access, TCP bind/connect,
 * abstract-socket and signal scoping) and a seccomp filter with the verdicts of Anvil's default
 * one in the fewest instructions. No verification, no reporting, no environment filtering, no
 * error detail: the least any sandbox with these walls can cost.
 *
 *   sandbox_floor [--no-init | --layers WS] PROGRAM [ARG...]
 *
 * Exit status: the command's, 125 when a step failed (with a message on stderr). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/mount.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
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

/* ---- --layers: the required layers, cheapest form ---- */

#ifndef SYS_fchmodat2
#define SYS_fchmodat2 452
#endif
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif

struct floor_ruleset_attr { /* Landlock ABI >= 6 layout */
  uint64_t handled_access_fs, handled_access_net, scoped;
};
struct floor_path_beneath {
  uint64_t allowed_access;
  int32_t parent_fd;
} __attribute__((packed));

#define FS_EXECUTE (1ULL << 0)
#define FS_WRITE_FILE (1ULL << 1)
#define FS_READ_FILE (1ULL << 2)
#define FS_READ_DIR (1ULL << 3)
#define FS_ALL ((1ULL << 16) - 1) /* ABI 5: up to IOCTL_DEV */
#define FS_READ (FS_EXECUTE | FS_READ_FILE | FS_READ_DIR)

static const char *const runtime_roots[] = {"/bin", "/sbin", "/usr", "/etc", "/lib", "/lib64"};
static const char *const devices[] = {"null", "zero", "full", "random", "urandom", "tty"};

/* A detached copy of FROM's mount tree, read-only when asked (before the staging tmpfs hides it).
 */
static int clone_tree(const char *from, int read_only) {
  int fd = (int)syscall(SYS_open_tree, AT_FDCWD, from, OPEN_TREE_CLONE | AT_RECURSIVE | O_CLOEXEC);
  if (fd < 0 || !read_only) return fd;
  struct mount_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
  if (syscall(SYS_mount_setattr, fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr)) {
    close(fd);
    return -1;
  }
  return fd;
}

static int attach(int fd, const char *to) {
  int rc = (int)syscall(SYS_move_mount, fd, "", AT_FDCWD, to, MOVE_MOUNT_F_EMPTY_PATH);
  close(fd);
  return rc;
}

static int mkdir_p(const char *path) {
  char buf[4096];
  snprintf(buf, sizeof buf, "%s", path);
  for (char *p = buf + 1; *p; ++p) {
    if (*p != '/') continue;
    *p = 0;
    if (mkdir(buf, 0755) && errno != EEXIST) return -1;
    *p = '/';
  }
  return mkdir(buf, 0755) && errno != EEXIST ? -1 : 0;
}

enum { NROOTS = sizeof runtime_roots / sizeof *runtime_roots };
enum { NDEVS = sizeof devices / sizeof *devices };

/* Clone every source tree, build the view on a staging tmpfs over /tmp, pivot into it. */
static int mount_view(const char *ws) {
  char path[4096], git[4096], links[NROOTS][256];
  int roots[NROOTS], devs[NDEVS], ws_fd, git_fd = -1;
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL)) return -1;
  for (size_t i = 0; i < NROOTS; ++i) {
    struct stat st;
    roots[i] = -1;
    links[i][0] = 0;
    if (lstat(runtime_roots[i], &st)) continue;
    if (S_ISLNK(st.st_mode)) { /* merged /usr: keep the symlink */
      ssize_t n = readlink(runtime_roots[i], links[i], sizeof links[i] - 1);
      if (n < 0) return -1;
      links[i][n] = 0;
    } else if ((roots[i] = clone_tree(runtime_roots[i], 1)) < 0) {
      return -1;
    }
  }
  if ((ws_fd = clone_tree(ws, 0)) < 0) return -1;
  snprintf(git, sizeof git, "%s/.git", ws);
  if (access(git, F_OK) == 0 && (git_fd = clone_tree(git, 1)) < 0) return -1;
  for (size_t i = 0; i < NDEVS; ++i) {
    snprintf(path, sizeof path, "/dev/%s", devices[i]);
    if ((devs[i] = clone_tree(path, 0)) < 0) return -1;
  }
  if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m") || chdir("/tmp"))
    return -1;
  for (size_t i = 0; i < NROOTS; ++i) {
    if (links[i][0] && symlink(links[i], runtime_roots[i] + 1)) return -1;
    if (roots[i] >= 0 &&
        (mkdir(runtime_roots[i] + 1, 0755) || attach(roots[i], runtime_roots[i] + 1)))
      return -1;
  }
  if (mkdir("tmp", 01777) || mount("tmpfs", "tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777"))
    return -1;
  if (mkdir("dev", 0755) || mount("tmpfs", "dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755"))
    return -1;
  for (size_t i = 0; i < NDEVS; ++i) {
    snprintf(path, sizeof path, "dev/%s", devices[i]);
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0444);
    if (fd < 0) return -1;
    close(fd);
    if (attach(devs[i], path)) return -1;
  }
  if (mkdir("proc", 0755) || mount("proc", "proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL))
    return -1;
  /* Last: the workspace may lie beneath /tmp or /dev (e.g. /dev/shm). */
  snprintf(path, sizeof path, ".%s", ws);
  if (mkdir_p(path) || attach(ws_fd, path)) return -1;
  snprintf(path, sizeof path, ".%s/.git", ws);
  if (git_fd >= 0 && attach(git_fd, path)) return -1;
  if (syscall(SYS_pivot_root, ".", ".") || umount2(".", MNT_DETACH) || chdir(ws)) return -1;
  return 0;
}

static int landlock(const char *ws) {
  struct floor_ruleset_attr attr = {FS_ALL, 3 /* bind + connect TCP */, 3 /* abstract, signal */};
  int rs = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
  if (rs < 0) return -1;
  struct {
    const char *path;
    uint64_t access;
  } rules[] = {{"/", FS_READ_DIR},
               {"/bin", FS_READ},
               {"/sbin", FS_READ},
               {"/usr", FS_READ},
               {"/etc", FS_READ},
               {"/lib", FS_READ},
               {"/lib64", FS_READ},
               {ws, FS_ALL},
               {"/tmp", FS_ALL},
               {"/dev", FS_READ_FILE | FS_WRITE_FILE},
               {"/proc", FS_READ_FILE | FS_READ_DIR}};
  for (size_t i = 0; i < sizeof rules / sizeof *rules; ++i) {
    int fd = open(rules[i].path, O_PATH | O_CLOEXEC);
    if (fd < 0) continue;
    struct floor_path_beneath pb = {rules[i].access, fd};
    long rc = syscall(SYS_landlock_add_rule, rs, 1 /* PATH_BENEATH */, &pb, 0);
    close(fd);
    if (rc) return -1;
  }
  int rc = (int)syscall(SYS_landlock_restrict_self, rs, 0);
  close(rs);
  return rc;
}

/* The seccomp verdicts of Anvil's default command filter (src/linux/seccomp_rules.cc), x86_64
 * only, in the fewest instructions: a foreign ABI (i386, x32) kills; set-id mode bits on a file
 * being created or chmod-ed, namespace flags to clone, terminal injection ioctls, personality
 * bits that weaken mitigations, and socket families other than Unix, IP and route netlink are
 * refused; openat2 and clone3 answer ENOSYS; a deny list answers EPERM. The calls with argument
 * checks come first, the most frequent first: the kernel caches the verdict of every call whose
 * answer does not depend on its arguments, so only these run the program, and a file opened
 * without O_CREAT leaves it after eight instructions. */
enum { NEXT, ALLOW, DENY, NOSYS, KILL, SKIP }; /* jump targets, resolved below */
static struct sock_filter prog[192];
static unsigned char to_t[192], to_f[192];
static size_t len, block;

static void ld(unsigned offset) {
  prog[len] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offset);
  to_t[len] = to_f[len] = NEXT;
  ++len;
}
static void jump(unsigned op, unsigned k, int t, int f) {
  prog[len] = (struct sock_filter)BPF_JUMP(BPF_JMP | op | BPF_K, k, 0, 0);
  to_t[len] = (unsigned char)t;
  to_f[len] = (unsigned char)f;
  ++len;
}
#define ARG(i) (unsigned)offsetof(struct seccomp_data, args[i]) /* the low half (little endian) */
/* A block for one syscall: every other number skips to the next block. */
static void begin(int nr) {
  block = len;
  jump(BPF_JEQ, (unsigned)nr, NEXT, SKIP);
}
static void end(void) {
  for (size_t i = block; i < len; ++i) {
    if (to_f[i] == SKIP) {
      prog[i].jf = (unsigned char)(len - i - 1);
      to_f[i] = NEXT;
    }
  }
}
/* Set-id bits in the mode of a call that creates (FLAGS >= 0: only with O_CREAT or O_TMPFILE). */
static void set_id(int nr, int flags, int mode) {
  begin(nr);
  if (flags >= 0) {
    ld(ARG(flags));
    jump(BPF_JSET, O_CREAT | 020000000 /* O_TMPFILE's own bit */, NEXT, ALLOW);
  }
  ld(ARG(mode));
  jump(BPF_JSET, S_ISUID | S_ISGID, DENY, ALLOW);
  end();
}

static int seccomp(void) {
  static const int denied[] = {SYS_ptrace,
                               SYS_process_vm_readv,
                               SYS_process_vm_writev,
                               SYS_pidfd_getfd,
                               SYS_kcmp,
                               SYS_mount,
                               SYS_umount2,
                               SYS_pivot_root,
                               SYS_chroot,
                               SYS_unshare,
                               SYS_setns,
                               SYS_move_mount,
                               SYS_open_tree,
                               SYS_fsopen,
                               SYS_fsmount,
                               SYS_fspick,
                               SYS_fsconfig,
                               SYS_mount_setattr,
                               SYS_bpf,
                               SYS_perf_event_open,
                               SYS_keyctl,
                               SYS_add_key,
                               SYS_request_key,
                               SYS_userfaultfd,
                               SYS_io_uring_setup,
                               SYS_io_uring_enter,
                               SYS_io_uring_register,
                               SYS_kexec_load,
                               SYS_kexec_file_load,
                               SYS_init_module,
                               SYS_finit_module,
                               SYS_delete_module,
                               SYS_open_by_handle_at,
                               SYS_acct,
                               SYS_swapon,
                               SYS_swapoff,
                               SYS_reboot,
                               SYS_syslog,
                               SYS_vhangup,
                               SYS_iopl,
                               SYS_ioperm,
                               SYS_quotactl,
                               SYS_lookup_dcookie,
                               SYS_uselib,
                               SYS_settimeofday,
                               SYS_clock_settime,
                               SYS_clock_adjtime,
                               SYS_fanotify_init};
  const unsigned namespaces = CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER |
                              CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWCGROUP;
  len = 0;
  ld((unsigned)offsetof(struct seccomp_data, arch));
  jump(BPF_JEQ, 0xc000003e /* AUDIT_ARCH_X86_64 */, NEXT, KILL);
  ld((unsigned)offsetof(struct seccomp_data, nr));
  jump(BPF_JGE, 0x40000000 /* x32 */, KILL, NEXT);
  set_id(SYS_openat, 2, 3);
  begin(SYS_clone);
  ld(ARG(0));
  jump(BPF_JSET, namespaces, DENY, ALLOW);
  end();
  begin(SYS_ioctl);
  ld(ARG(1));
  jump(BPF_JEQ, 0x5412 /* TIOCSTI */, DENY, NEXT);
  jump(BPF_JEQ, 0x541C /* TIOCLINUX */, DENY, NEXT);
  jump(BPF_JEQ, 0x5423 /* TIOCSETD */, DENY, ALLOW);
  end();
  set_id(SYS_open, 1, 2);
  set_id(SYS_creat, -1, 1);
  set_id(SYS_chmod, -1, 1);
  set_id(SYS_fchmod, -1, 1);
  set_id(SYS_fchmodat, -1, 2);
  set_id(SYS_fchmodat2, -1, 2);
  set_id(SYS_mkdir, -1, 1);
  set_id(SYS_mkdirat, -1, 2);
  set_id(SYS_mknod, -1, 1);
  set_id(SYS_mknodat, -1, 2);
  for (int i = 0; i < 2; ++i) { /* the sandbox's own network namespace: loopback only */
    begin(i ? SYS_socketpair : SYS_socket);
    ld(ARG(0) + 4); /* the kernel reads an int; the default filter compares all 64 bits */
    jump(BPF_JEQ, 0, NEXT, DENY);
    ld(ARG(0));
    jump(BPF_JEQ, AF_UNIX, ALLOW, NEXT);
    jump(BPF_JEQ, AF_INET, ALLOW, NEXT);
    jump(BPF_JEQ, AF_INET6, ALLOW, NEXT);
    jump(BPF_JEQ, AF_NETLINK, NEXT, DENY);
    ld(ARG(2));
    jump(BPF_JEQ, 0 /* NETLINK_ROUTE */, ALLOW, DENY);
    end();
  }
  begin(SYS_personality); /* the query form has bit 31 set */
  ld(ARG(0));
  jump(BPF_JSET, 0x80000000, ALLOW, NEXT);
  jump(BPF_JSET, 0x0040000 | 0x0100000 | 0x0200000 | 0x0400000, DENY, ALLOW);
  end();
  jump(BPF_JEQ, SYS_openat2, NOSYS, NEXT); /* its mode is in memory a filter cannot read */
  jump(BPF_JEQ, SYS_clone3, NOSYS, NEXT);  /* so are its flags: libc falls back to clone */
  for (size_t i = 0; i < sizeof denied / sizeof *denied; ++i)
    jump(BPF_JEQ, (unsigned)denied[i], DENY, NEXT);
  size_t at[KILL + 1] = {0};
  static const unsigned ret[KILL + 1] = {0, SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO | EPERM,
                                         SECCOMP_RET_ERRNO | ENOSYS, SECCOMP_RET_KILL_PROCESS};
  for (int r = ALLOW; r <= KILL; ++r) {
    at[r] = len;
    prog[len++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, ret[r]);
  }
  for (size_t i = 0; i < at[ALLOW]; ++i) {
    if (to_t[i] != NEXT) prog[i].jt = (unsigned char)(at[to_t[i]] - i - 1);
    if (to_f[i] != NEXT) prog[i].jf = (unsigned char)(at[to_f[i]] - i - 1);
  }
  struct sock_fprog fprog = {(unsigned short)len, prog};
  return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fprog);
}

/* In the command (after vfork, before exec): what a sandbox applies per command. */
static int confine(const char *ws) {
  struct rlimit nofile = {1024, 1024}, core = {0, 0};
  if (setsid() < 0 || prctl(PR_SET_PDEATHSIG, SIGKILL) || setrlimit(RLIMIT_CORE, &core) ||
      setrlimit(RLIMIT_NOFILE, &nofile) || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || landlock(ws) ||
      seccomp())
    return -1;
  return 0;
}

/* Root: a pids cgroup (v1 or v2) holding the sandbox, removed after. "" when none is usable.
 * Returns how the sandbox enters it: v1, a descriptor of its `tasks` (the init writes "0", a move
 * of itself alone); v2, a descriptor of the directory for CLONE_INTO_CGROUP. -1 when none. */
static int pids_cgroup(char *dir, size_t size, int *v2) {
  dir[0] = 0;
  if (geteuid() != 0) return -1;
  *v2 = access("/sys/fs/cgroup/pids/cgroup.procs", F_OK) != 0;
  snprintf(dir, size, "%s/sandbox-floor-%d", *v2 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/pids",
           (int)getpid());
  char file[4200];
  if (mkdir(dir, 0700)) {
    dir[0] = 0;
    return -1;
  }
  snprintf(file, sizeof file, "%s/pids.max", dir);
  int fd = -1;
  if (write_file(file, "4096") == 0) {
    snprintf(file, sizeof file, "%s/tasks", dir);
    fd = *v2 ? open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC) : open(file, O_WRONLY | O_CLOEXEC);
  }
  if (fd < 0) {
    rmdir(dir);
    dir[0] = 0;
  }
  return fd;
}

static int exit_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + WTERMSIG(status);
}

int main(int argc, char **argv) {
  int arg = 1, init = 1;
  const char *ws = NULL;
  if (arg < argc && strcmp(argv[arg], "--no-init") == 0) {
    init = 0;
    ++arg;
  } else if (arg + 1 < argc && strcmp(argv[arg], "--layers") == 0) {
    ws = argv[arg + 1];
    arg += 2;
  }
  if (arg >= argc || (ws && ws[0] != '/')) {
    fprintf(stderr, "usage: sandbox_floor [--no-init | --layers /ABSOLUTE/WS] PROGRAM [ARG...]\n");
    return 125;
  }
  char cgroup[4096] = "";
  int cgroup_fd = -1, cgroup_v2 = 0;
  if (ws) cgroup_fd = pids_cgroup(cgroup, sizeof cgroup, &cgroup_v2);
  uid_t uid = geteuid();
  gid_t gid = getegid();
  struct clone_args ca;
  memset(&ca, 0, sizeof ca);
  ca.flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWNET;
  ca.exit_signal = SIGCHLD;
  if (cgroup_fd >= 0 && cgroup_v2) {
    ca.flags |= CLONE_INTO_CGROUP;
    ca.cgroup = (uint64_t)cgroup_fd;
  }
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
    if (ws && mount_view(ws)) {
      fprintf(stderr, "sandbox_floor: mount view: %s\n", strerror(errno));
      _exit(125);
    }
    if (cgroup_fd >= 0 && !cgroup_v2 && write(cgroup_fd, "0", 1) != 1) _exit(125);
    if (!init) {
      execv(argv[arg], argv + arg);
      _exit(127);
    }
    pid_t command = vfork();
    if (command == 0) {
      if (ws && confine(ws)) _exit(125);
      execv(argv[arg], argv + arg);
      _exit(127);
    }
    if (command < 0) _exit(125);
    int status = 0;
    while (waitpid(command, &status, 0) < 0 && errno == EINTR) {
    }
    _exit(exit_code(status));
  }
  if (cgroup_fd >= 0) close(cgroup_fd);
  int status = 0;
  while (waitpid((pid_t)pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (cgroup[0]) rmdir(cgroup);
  return exit_code(status);
}
