// The floor of bench/proxy.sh: the simplest user-space 2-hop TCP relay, with none of
// anvil-proxy's work (no HTTP parsing, no policy, no caps, no sandbox, no namespace). It
// listens on 127.0.0.1 (an ephemeral port, printed on stdout), and for every connection dials
// ORIGIN_PORT on 127.0.0.1 and moves bytes both ways with blocking splice(2) through a pipe,
// one thread per direction. Whatever this relay gets is what any user-space proxy gets on this
// machine; anvil-proxy's extra cost is the gap to it.
//   splice_relay ORIGIN_PORT [PIPE_BYTES]   (PIPE_BYTES: F_SETPIPE_SZ; 0 = the kernel default)
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

static int g_pipe_bytes;

struct direction {
  int src, dst;
};

static void* pump(void* arg) {
  struct direction* d = arg;
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return NULL;
  if (g_pipe_bytes > 0) (void)fcntl(p[1], F_SETPIPE_SZ, g_pipe_bytes);
  for (;;) {
    ssize_t n = splice(d->src, NULL, p[1], NULL, 1 << 30, SPLICE_F_MOVE);
    if (n <= 0) break;
    while (n > 0) {
      ssize_t w = splice(p[0], NULL, d->dst, NULL, (size_t)n, SPLICE_F_MOVE);
      if (w <= 0) goto out;
      n -= w;
    }
  }
out:
  shutdown(d->dst, SHUT_WR);
  close(p[0]);
  close(p[1]);
  return NULL;
}

static struct sockaddr_in g_origin;

static void* serve(void* arg) {
  int client = (int)(long)arg;
  int up = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (up < 0 || connect(up, (struct sockaddr*)&g_origin, sizeof(g_origin)) != 0) {
    close(client);
    if (up >= 0) close(up);
    return NULL;
  }
  struct direction up_dir = {client, up}, down_dir = {up, client};
  pthread_t t;
  pthread_create(&t, NULL, pump, &up_dir);
  pump(&down_dir);
  pthread_join(t, NULL);
  close(up);
  close(client);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: splice_relay ORIGIN_PORT [PIPE_BYTES]\n");
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  g_pipe_bytes = argc > 2 ? atoi(argv[2]) : 0;
  g_origin.sin_family = AF_INET;
  g_origin.sin_port = htons((unsigned short)atoi(argv[1]));
  g_origin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {0};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  if (l < 0 || bind(l, (struct sockaddr*)&a, sizeof(a)) != 0 || listen(l, 64) != 0 ||
      getsockname(l, (struct sockaddr*)&a, &len) != 0) {
    perror("splice_relay: listen");
    return 1;
  }
  printf("%d\n", ntohs(a.sin_port));
  fflush(stdout);
  for (;;) {
    int c = accept4(l, NULL, NULL, SOCK_CLOEXEC);
    if (c < 0) continue;
    pthread_t t;
    if (pthread_create(&t, NULL, serve, (void*)(long)c) == 0) {
      pthread_detach(t);
    } else {
      close(c);
    }
  }
}
