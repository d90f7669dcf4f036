#include "test_dns_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>

namespace anvil::testing {

namespace {

constexpr int kTypeA = 1;
constexpr int kTypeAaaa = 28;

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

void Put16(std::string& out, unsigned value) {
  out.push_back(static_cast<char>((value >> 8) & 0xff));
  out.push_back(static_cast<char>(value & 0xff));
}

}  // namespace

std::unique_ptr<TestDnsServer> TestDnsServer::Start() {
  std::unique_ptr<TestDnsServer> server(new TestDnsServer());
  server->socket_.Reset(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  server->stop_.Reset(eventfd(0, EFD_CLOEXEC));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (!server->socket_ || !server->stop_ ||
      bind(server->socket_.Get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(server->socket_.Get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ADD_FAILURE() << "test DNS server: cannot bind 127.0.0.1";
    return nullptr;
  }
  server->port_ = ntohs(addr.sin_port);
  server->thread_ = std::thread([s = server.get()] { s->Serve(); });
  return server;
}

TestDnsServer::~TestDnsServer() {
  uint64_t one = 1;
  if (stop_ && ::write(stop_.Get(), &one, sizeof(one)) < 0) std::abort();
  if (thread_.joinable()) thread_.join();
}

void TestDnsServer::SetA(const std::string& name, std::vector<std::vector<IpAddress>> answers) {
  std::lock_guard lock(mu_);
  known_[Lower(name)] = true;
  table_[{Lower(name), kTypeA}] = std::move(answers);
}

void TestDnsServer::SetAaaa(const std::string& name, std::vector<std::vector<IpAddress>> answers) {
  std::lock_guard lock(mu_);
  known_[Lower(name)] = true;
  table_[{Lower(name), kTypeAaaa}] = std::move(answers);
}

void TestDnsServer::Set(const std::string& name, const std::vector<IpAddress>& addresses) {
  std::vector<IpAddress> v4, v6;
  for (const auto& a : addresses) (a.is_v4() ? v4 : v6).push_back(a);
  SetA(name, {v4});
  SetAaaa(name, {v6});
}

int TestDnsServer::Queries(const std::string& name, int qtype) const {
  std::lock_guard lock(mu_);
  auto it = queries_.find({Lower(name), qtype});
  return it == queries_.end() ? 0 : it->second;
}

std::string TestDnsServer::Address() const { return "127.0.0.1:" + std::to_string(port_); }

void TestDnsServer::Serve() {
  unsigned char buffer[1500];
  while (true) {
    pollfd fds[2] = {{socket_.Get(), POLLIN, 0}, {stop_.Get(), POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents) return;
    sockaddr_in peer{};
    socklen_t peer_len = sizeof(peer);
    ssize_t n = recvfrom(socket_.Get(), buffer, sizeof(buffer), 0,
                         reinterpret_cast<sockaddr*>(&peer), &peer_len);
    if (n <= 0) continue;
    std::string reply = Answer(buffer, static_cast<size_t>(n));
    if (reply.empty()) continue;
    sendto(socket_.Get(), reply.data(), reply.size(), 0, reinterpret_cast<sockaddr*>(&peer),
           peer_len);
  }
}

std::string TestDnsServer::Answer(const unsigned char* q, size_t length) {
  if (length < 12 || q[4] != 0 || q[5] != 1) return {};  // exactly one question
  size_t pos = 12;
  std::string name;
  while (pos < length && q[pos] != 0) {
    size_t label = q[pos++];
    if (label > 63 || pos + label > length) return {};
    if (!name.empty()) name.push_back('.');
    name.append(reinterpret_cast<const char*>(q + pos), label);
    pos += label;
  }
  if (pos + 5 > length) return {};
  ++pos;  // the root label
  const int qtype = (q[pos] << 8) | q[pos + 1];
  const size_t question_end = pos + 4;
  name = Lower(name);
  ++total_;
  std::vector<IpAddress> answers;
  bool known;
  {
    std::lock_guard lock(mu_);
    int index = queries_[{name, qtype}]++;
    known = known_.count(name) > 0;
    auto it = table_.find({name, qtype});
    if (it != table_.end() && !it->second.empty()) {
      answers = it->second[std::min<size_t>(static_cast<size_t>(index), it->second.size() - 1)];
    }
  }
  std::string out(reinterpret_cast<const char*>(q), 2);  // id
  const unsigned rd = q[2] & 0x01;
  out.push_back(static_cast<char>(0x84 | rd));            // QR, AA, RD as asked
  out.push_back(static_cast<char>(known ? 0x80 : 0x83));  // RA; NOERROR or NXDOMAIN
  Put16(out, 1);
  Put16(out, static_cast<unsigned>(answers.size()));
  Put16(out, 0);
  Put16(out, 0);
  out.append(reinterpret_cast<const char*>(q + 12), question_end - 12);
  for (const IpAddress& a : answers) {
    Put16(out, 0xc00c);  // the question's name
    Put16(out, a.is_v4() ? kTypeA : kTypeAaaa);
    Put16(out, 1);  // IN
    Put16(out, 0);  // TTL 0: nothing may cache it
    Put16(out, 0);
    const size_t size = a.is_v4() ? 4 : 16;
    Put16(out, static_cast<unsigned>(size));
    out.append(reinterpret_cast<const char*>(a.bytes().data()), size);
  }
  return out;
}

}  // namespace anvil::testing
