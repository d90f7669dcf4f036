// The in-kernel relay of bench/proxy.sh (KINDS=sockmap, root): the same 2-hop TCP relay as
// splice_relay.c, but the bytes never reach user space: both sockets of a connection go into a
// BPF sockmap whose sk_skb verdict program (raw BPF, no libbpf or clang needed) redirects every
// received skb to the other socket's egress, counting bytes per socket in a hash map keyed by
// socket cookie. This process only accepts, dials, fills the maps and waits for the origin's
// EOF and the client's ACK of every redirected byte before closing. It answers whether an
// in-kernel relay beats a user-space splice relay on this machine (the kernel sends redirected
// skbs from a workqueue, so a third context still runs per chunk). Needs CAP_BPF +
// CAP_NET_ADMIN; prints the port like splice_relay.
//   sockmap_relay ORIGIN_PORT
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/bpf.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#define INSN(c, d, s, o, i) ((struct bpf_insn){(c), (d), (s), (o), (i)})
#define MOV64_REG(d, s) INSN(BPF_ALU64 | BPF_MOV | BPF_X, d, s, 0, 0)
#define MOV64_IMM(d, i) INSN(BPF_ALU64 | BPF_MOV | BPF_K, d, 0, 0, i)
#define ADD64_IMM(d, i) INSN(BPF_ALU64 | BPF_ADD | BPF_K, d, 0, 0, i)
#define LDX(sz, d, s, o) INSN(BPF_LDX | (sz) | BPF_MEM, d, s, o, 0)
#define STX(sz, d, s, o) INSN(BPF_STX | (sz) | BPF_MEM, d, s, o, 0)
#define XADD64(d, s, o) INSN(BPF_STX | BPF_DW | BPF_ATOMIC, d, s, o, BPF_ADD)
#define JEQ_IMM(d, i, o) INSN(BPF_JMP | BPF_JEQ | BPF_K, d, 0, o, i)
#define CALL(f) INSN(BPF_JMP | BPF_CALL, 0, 0, 0, f)
#define EXIT() INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0)
#define LD_MAP(d, fd) \
  INSN(BPF_LD | BPF_DW | BPF_IMM, d, BPF_PSEUDO_MAP_FD, 0, fd), INSN(0, 0, 0, 0, 0)

static long sys_bpf(int cmd, union bpf_attr* a) { return syscall(SYS_bpf, cmd, a, sizeof(*a)); }

static int g_sockmap, g_peers;
struct peer {
  uint32_t key, pad;
  uint64_t bytes;
};

static int setup_bpf(void) {
  union bpf_attr a;
  memset(&a, 0, sizeof(a));
  a.map_type = BPF_MAP_TYPE_SOCKMAP;
  a.key_size = 4;
  a.value_size = 4;
  a.max_entries = 256;
  g_sockmap = (int)sys_bpf(BPF_MAP_CREATE, &a);
  if (g_sockmap < 0) return perror("sockmap"), -1;
  memset(&a, 0, sizeof(a));
  a.map_type = BPF_MAP_TYPE_HASH;
  a.key_size = 8;
  a.value_size = sizeof(struct peer);
  a.max_entries = 256;
  g_peers = (int)sys_bpf(BPF_MAP_CREATE, &a);
  if (g_peers < 0) return perror("hash"), -1;
  struct bpf_insn prog[] = {
      MOV64_REG(6, 1),
      CALL(BPF_FUNC_get_socket_cookie),
      STX(BPF_DW, 10, 0, -8),
      LD_MAP(1, g_peers),
      MOV64_REG(2, 10),
      ADD64_IMM(2, -8),
      CALL(BPF_FUNC_map_lookup_elem),
      JEQ_IMM(0, 0, 10),
      MOV64_REG(7, 0),
      LDX(BPF_W, 1, 6, offsetof(struct __sk_buff, len)),
      XADD64(7, 1, 8),
      LDX(BPF_W, 3, 7, 0),
      MOV64_REG(1, 6),
      LD_MAP(2, g_sockmap),
      MOV64_IMM(4, 0),
      CALL(BPF_FUNC_sk_redirect_map),
      EXIT(),
      MOV64_IMM(0, 0),
      EXIT(),
  };
  static char log[65536];
  memset(&a, 0, sizeof(a));
  a.prog_type = BPF_PROG_TYPE_SK_SKB;
  a.insns = (uint64_t)(uintptr_t)prog;
  a.insn_cnt = sizeof(prog) / sizeof(prog[0]);
  a.license = (uint64_t)(uintptr_t) "GPL";
  a.log_buf = (uint64_t)(uintptr_t)log;
  a.log_size = sizeof(log);
  a.log_level = 1;
  int pfd = (int)sys_bpf(BPF_PROG_LOAD, &a);
  if (pfd < 0) {
    perror("prog load");
    fprintf(stderr, "%s\n", log);
    return -1;
  }
  memset(&a, 0, sizeof(a));
  a.target_fd = g_sockmap;
  a.attach_bpf_fd = pfd;
  a.attach_type = BPF_SK_SKB_VERDICT;
  if (sys_bpf(BPF_PROG_ATTACH, &a) != 0) return perror("attach"), -1;
  return 0;
}

static int map_update(int map, const void* k, const void* v) {
  union bpf_attr a;
  memset(&a, 0, sizeof(a));
  a.map_fd = map;
  a.key = (uint64_t)(uintptr_t)k;
  a.value = (uint64_t)(uintptr_t)v;
  return (int)sys_bpf(BPF_MAP_UPDATE_ELEM, &a);
}
static int map_lookup(int map, const void* k, void* v) {
  union bpf_attr a;
  memset(&a, 0, sizeof(a));
  a.map_fd = map;
  a.key = (uint64_t)(uintptr_t)k;
  a.value = (uint64_t)(uintptr_t)v;
  return (int)sys_bpf(BPF_MAP_LOOKUP_ELEM, &a);
}
static void map_delete(int map, const void* k) {
  union bpf_attr a;
  memset(&a, 0, sizeof(a));
  a.map_fd = map;
  a.key = (uint64_t)(uintptr_t)k;
  sys_bpf(BPF_MAP_DELETE_ELEM, &a);
}
static uint64_t cookie(int fd) {
  uint64_t c = 0;
  socklen_t l = sizeof(c);
  getsockopt(fd, SOL_SOCKET, SO_COOKIE, &c, &l);
  return c;
}

static struct sockaddr_in g_origin;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned char g_used[128];

static void* serve(void* arg) {
  int client = (int)(long)arg;
  int up = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (up < 0 || connect(up, (struct sockaddr*)&g_origin, sizeof(g_origin)) != 0) {
    close(client);
    if (up >= 0) close(up);
    return NULL;
  }
  pthread_mutex_lock(&g_mu);
  int slot = -1;
  for (int i = 0; i < 128; i++)
    if (!g_used[i]) {
      g_used[i] = 1;
      slot = i;
      break;
    }
  pthread_mutex_unlock(&g_mu);
  if (slot < 0) {
    close(client), close(up);
    return NULL;
  }
  uint32_t kc = 2 * slot, ku = 2 * slot + 1;
  uint64_t cc = cookie(client), cu = cookie(up);
  struct peer pc = {ku, 0, 0}, pu = {kc, 0, 0};
  map_update(g_peers, &cc, &pc);
  map_update(g_peers, &cu, &pu);
  // Anything the client sent before it was in the map is relayed by hand first.
  char buf[65536];
  ssize_t n;
  while ((n = recv(client, buf, sizeof(buf), MSG_DONTWAIT)) > 0) send(up, buf, (size_t)n, 0);
  uint32_t fc = (uint32_t)client, fu = (uint32_t)up;
  if (map_update(g_sockmap, &kc, &fc) != 0 || map_update(g_sockmap, &ku, &fu) != 0)
    perror("sockmap update");
  while ((n = recv(client, buf, sizeof(buf), MSG_DONTWAIT)) > 0) send(up, buf, (size_t)n, 0);
  // Wait for EOF from the origin, then until the client got all of it.
  struct pollfd p[2] = {{client, POLLRDHUP, 0}, {up, POLLRDHUP, 0}};
  for (;;) {
    poll(p, 2, 100);
    if (p[1].revents || p[0].revents) break;
  }
  for (int i = 0; i < 1000; i++) {
    struct peer v;
    struct tcp_info ti;
    socklen_t l = sizeof(ti);
    if (map_lookup(g_peers, &cu, &v) != 0) break;
    getsockopt(client, IPPROTO_TCP, TCP_INFO, &ti, &l);
    if (ti.tcpi_bytes_acked >= v.bytes) break;
    usleep(1000);
  }
  map_delete(g_peers, &cc);
  map_delete(g_peers, &cu);
  close(up);
  close(client);
  pthread_mutex_lock(&g_mu);
  g_used[slot] = 0;
  pthread_mutex_unlock(&g_mu);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  signal(SIGPIPE, SIG_IGN);
  if (setup_bpf() != 0) return 1;
  g_origin.sin_family = AF_INET;
  g_origin.sin_port = htons((unsigned short)atoi(argv[1]));
  g_origin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {0};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (l < 0 || bind(l, (struct sockaddr*)&a, sizeof(a)) != 0 || listen(l, 64) != 0 ||
      getsockname(l, (struct sockaddr*)&a, &len) != 0)
    return perror("listen"), 1;
  printf("%d\n", ntohs(a.sin_port));
  fflush(stdout);
  for (;;) {
    int c = accept4(l, NULL, NULL, SOCK_CLOEXEC);
    if (c < 0) continue;
    pthread_t t;
    if (pthread_create(&t, NULL, serve, (void*)(long)c) == 0)
      pthread_detach(t);
    else
      close(c);
  }
}
