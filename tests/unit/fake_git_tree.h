// An in-memory file tree behind GitFs (policy/git_metadata.h), for the walk's unit tests, and
// the fixtures they share (the environment, a git dir's shape, the markers a scan found).
#pragma once

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "policy/git_metadata.h"

namespace anvil::testing_support {

// An in-memory file tree behind GitFs: directories, files and symlinks with inode numbers that
// survive renames, and a clock that moves `tick` per reading.
class FakeTree {
 public:
  struct Node {
    GitFileType type = GitFileType::kDir;
    std::string content;  // file contents, or a symlink's target
    uint64_t ino = 0;
    int64_t ctime = 0;  // set from `wall` when made, and on a directory when its entries change
    bool listable = true;
    bool writable = true;
    bool executable = false;  // a file's execute bits
    uint64_t nlink = 1;       // a file's hard links (the other names are not modelled)
  };

  FakeTree() { nodes_["/"] = Node{GitFileType::kDir, "", next_++, wall}; }

  void Dir(const std::string& path) {
    if (path == "/" || nodes_.count(path)) return;
    Dir(Parent(path));
    Add(path, Node{GitFileType::kDir, "", next_++, wall});
  }
  void File(const std::string& path, const std::string& content = "") {
    Dir(Parent(path));
    Add(path, Node{GitFileType::kFile, content, next_++, wall});
  }
  // chmod(2): the node's own ctime changes, never its directory's.
  void Chmod(const std::string& path, bool executable) {
    nodes_.at(path).executable = executable;
    nodes_.at(path).ctime = wall;
  }
  void Link(const std::string& path, const std::string& target) {
    Dir(Parent(path));
    Add(path, Node{GitFileType::kSymlink, target, next_++, wall});
  }
  void Remove(const std::string& path) {
    Touch(Parent(path));
    for (auto it = nodes_.begin(); it != nodes_.end();) {
      if (it->first == path || it->first.rfind(path + "/", 0) == 0)
        it = nodes_.erase(it);
      else
        ++it;
    }
  }
  void Move(const std::string& from, const std::string& to) {
    Touch(Parent(from));
    Touch(Parent(to));
    std::map<std::string, Node> moved;
    for (auto it = nodes_.begin(); it != nodes_.end();) {
      if (it->first == from || it->first.rfind(from + "/", 0) == 0) {
        moved[to + it->first.substr(from.size())] = it->second;
        it = nodes_.erase(it);
      } else {
        ++it;
      }
    }
    for (auto& [p, n] : moved) nodes_[p] = n;
  }
  Node& At(const std::string& path) { return nodes_.at(path); }
  // What the kernel does to a directory whose entries change.
  void Touch(const std::string& dir) {
    if (auto it = nodes_.find(dir); it != nodes_.end()) it->second.ctime = wall;
  }
  bool Has(const std::string& path) const { return nodes_.count(path) > 0; }
  // A fresh `git init` at `top`: sample hooks, a plain config.
  void GitInit(const std::string& top) {
    File(top + "/.git/HEAD", "ref: refs/heads/main\n");
    Dir(top + "/.git/objects");
    Dir(top + "/.git/refs");
    File(top + "/.git/config",
         "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n");
    File(top + "/.git/hooks/pre-commit.sample", "#!/bin/sh\n");
  }

  std::optional<std::string> Resolve(const std::string& path, int depth = 0) const {
    if (depth > 40 || path.empty() || path[0] != '/') return std::nullopt;
    std::string cur = "/";
    size_t pos = 1;
    while (pos <= path.size()) {
      size_t next = path.find('/', pos);
      if (next == std::string::npos) next = path.size();
      std::string part = path.substr(pos, next - pos);
      pos = next + 1;
      if (part.empty() || part == ".") continue;
      if (part == "..") {
        cur = Parent(cur);
        continue;
      }
      std::string candidate = cur == "/" ? "/" + part : cur + "/" + part;
      auto it = nodes_.find(candidate);
      if (it == nodes_.end()) return std::nullopt;
      if (it->second.type == GitFileType::kSymlink) {
        const std::string& t = it->second.content;
        auto r = Resolve(t[0] == '/' ? t : cur + "/" + t, depth + 1);
        if (!r) return std::nullopt;
        cur = *r;
      } else {
        cur = candidate;
      }
    }
    return cur;
  }

  GitFs Fs() {
    GitFs fs;
    fs.list_dir = [this](const std::string& path) -> Result<GitDirListing> {
      // As open(O_NOFOLLOW): symlinks on the way are followed, one at the end is not.
      auto parent = Resolve(Parent(path));
      if (!parent) return GitDirListing{};
      std::string name = path.substr(path.rfind('/') + 1);
      std::string dir = name.empty() ? *parent : *parent == "/" ? "/" + name : *parent + "/" + name;
      if (name == "..") dir = Parent(*parent);
      if (name == ".") dir = *parent;
      auto it = nodes_.find(dir);
      if (it == nodes_.end() || it->second.type != GitFileType::kDir) return GitDirListing{};
      if (!it->second.listable) return Fail("denied", "open " + dir + ": Permission denied");
      ++listed;
      GitDirListing out;
      out.dir.type = GitFileType::kDir;
      out.dir.dev = 1;
      out.dir.ino = it->second.ino;
      out.dir.ctime_sec = it->second.ctime;
      out.dir.mnt_id = mnt;
      out.dir.ctime_tracks_entries = ctime_tracks_entries;
      std::string prefix = dir == "/" ? "/" : dir + "/";
      for (auto c = nodes_.lower_bound(prefix); c != nodes_.end(); ++c) {
        if (c->first.rfind(prefix, 0) != 0) break;
        std::string rest = c->first.substr(prefix.size());
        if (rest.empty() || rest.find('/') != std::string::npos) continue;
        out.entries.push_back({rest, c->second.type});
      }
      return out;
    };
    fs.lstat = [this](const std::string& path) {
      GitFileFacts f;
      auto parent = Resolve(Parent(path));
      if (!parent) return f;
      std::string name = path.substr(path.rfind('/') + 1);
      std::string full = *parent == "/" ? "/" + name : *parent + "/" + name;
      if (name.empty()) full = *parent;
      auto it = nodes_.find(full);
      if (it == nodes_.end()) return f;
      f.type = it->second.type;
      f.dev = 1;
      f.ino = it->second.ino;
      f.ctime_sec = it->second.ctime;
      f.mnt_id = mnt;
      f.executable = it->second.type == GitFileType::kFile && it->second.executable;
      f.nlink = it->second.nlink;
      return f;
    };
    fs.readlink = [this](const std::string& path) -> std::optional<std::string> {
      auto parent = Resolve(Parent(path));
      if (!parent) return std::nullopt;
      std::string name = path.substr(path.rfind('/') + 1);
      auto it = nodes_.find(*parent == "/" ? "/" + name : *parent + "/" + name);
      if (it == nodes_.end() || it->second.type != GitFileType::kSymlink) return std::nullopt;
      return it->second.content;
    };
    fs.resolve = [this](const std::string& path) { return Resolve(path); };
    fs.read_file = [this](const std::string& path,
                          size_t max) -> Result<std::optional<std::string>> {
      auto r = Resolve(path);
      if (!r) return std::optional<std::string>();
      const Node& n = nodes_.at(*r);
      if (n.type != GitFileType::kFile) return std::optional<std::string>();
      if (n.content.size() > max) return Fail("limit", path + " too large");
      return std::optional<std::string>(n.content);
    };
    fs.writable = [this](const std::string& dir) {
      auto it = nodes_.find(dir);
      return it != nodes_.end() && it->second.writable;
    };
    fs.wall_seconds = [this] { return wall; };
    fs.now = [this] {
      clock_ += tick;
      return std::chrono::steady_clock::time_point(clock_);
    };
    fs.rename_noreplace = [this](const std::string& from, const std::string& to) -> Status {
      if (nodes_.count(to)) return Fail("io", to + " exists", EEXIST);
      if (!nodes_.count(from)) return Fail("io", from + " missing");
      Move(from, to);
      return Ok();
    };
    fs.link_to_file = [this](const std::string& link, const std::string& to) -> Status {
      if (nodes_.count(to)) return Fail("io", to + " exists", EEXIST);
      auto it = nodes_.find(link);
      if (it == nodes_.end() || it->second.type != GitFileType::kSymlink) {
        return Fail("io", link + " is no symlink");
      }
      const std::string target = it->second.content;
      Remove(link);
      File(to, target);
      return Ok();
    };
    return fs;
  }

  static std::string Parent(const std::string& path) {
    auto slash = path.rfind('/');
    return slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
  }

  std::chrono::steady_clock::duration tick{0};
  size_t listed = 0;
  int64_t wall = 1000;  // seconds: what new nodes and changed directories get as ctime
  bool ctime_tracks_entries = true;
  uint64_t mnt = 7;  // the mount every node is reached through

 private:
  void Add(const std::string& path, Node node) {
    Touch(Parent(path));
    nodes_[path] = std::move(node);
  }

  std::map<std::string, Node> nodes_;
  uint64_t next_ = 1;
  std::chrono::steady_clock::duration clock_{0};
};

// The environment of the walk's tests: a home, nothing else.
inline GitEnv TestGitEnv() {
  GitEnv env;
  env.home = "/home/u";
  return env;
}

// HEAD beside `objects` and `refs` of the given kinds ("dir", "file", "exec", "link"): a git dir
// to git, under any name, when both are directories (or pass access(X_OK)).
inline void GitDirShape(FakeTree& t, const std::string& dir, const std::string& objects = "dir",
                        const std::string& refs = "dir") {
  t.File(dir + "/HEAD", "ref: refs/heads/main\n");
  for (const auto& [name, kind] : {std::pair{"/objects", objects}, std::pair{"/refs", refs}}) {
    const std::string path = dir + name;
    if (kind == "dir") t.Dir(path);
    if (kind == "file" || kind == "exec") t.File(path, "#!/bin/sh\n");
    if (kind == "exec") t.Chmod(path, true);
    if (kind == "link") t.Link(path, "/usr/bin/git");
  }
}

// The markers of the repositories `scan` found, sorted.
inline std::vector<std::string> SortedMarkers(const GitScan& scan) {
  std::vector<std::string> out;
  for (const auto& r : scan.repos) out.push_back(r.marker);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace anvil::testing_support
