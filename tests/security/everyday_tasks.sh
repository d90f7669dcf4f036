#!/bin/bash
# The acceptance suite of everyday developer tasks under Anvil's DEFAULT policy
# (`anvil sandbox -- CMD`: workspace-write, network none, the per-workspace home), offline.
#
#   everyday_tasks.sh ANVIL WORKSPACE [project|home] [GROUP]
#
# WORKSPACE is a fresh directory of the caller's; with `home` the workspace is $HOME itself (the
# caller's home must then be WORKSPACE). GROUP runs one group of tasks (scripts, builds, python,
# node, git, system, files); without it, all. Each task runs in its own
# `anvil sandbox --cwd WORKSPACE -- bash -c SCRIPT` and checks what it printed; one line per
# task (PASS/FAIL/SKIP NAME), the output of a failed task after it, exit 1 when any failed.
# Tasks whose tool is missing on this machine are skipped, never failed. Run by
# t3_sandbox_acceptance_test.cc as root and as an unprivileged user; the results table of the
# default policy is docs/policy.md "Living with the sandbox".
set -u
anvil=$(realpath -- "$1")
ws=$2
mode=${3:-project}
only=${4:-}
failed=0
export LC_ALL=C.UTF-8 TERM=dumb

# task NAME EXPECTED SCRIPT: PASS when SCRIPT exits 0 and its output holds EXPECTED.
task() {
  local name=$1 expected=$2 script=$3 out rc
  out=$(cd "$ws" && timeout 120 "$anvil" sandbox --cwd "$ws" -- bash -c "$script" 2>&1 </dev/null)
  rc=$?
  if [[ $rc -eq 0 && $out == *"$expected"* ]]; then
    echo "PASS $name"
  else
    echo "FAIL $name (exit $rc, expected '$expected')"
    printf '%s\n' "$out" | sed 's/^/    | /' | tail -n 25
    failed=1
  fi
}
# needs TOOL...: false (and a SKIP line for the current task NAME) when a tool is missing.
needs() {
  local name=$1 t
  shift
  for t in "$@"; do
    if ! command -v "$t" >/dev/null 2>&1; then
      echo "SKIP $name ($t is missing)"
      return 1
    fi
  done
}

# group NAME: whether the tasks of group NAME run.
group() { [[ -z $only || $only == "$1" ]]; }

mkdir -p "$ws/proj"
cd "$ws/proj" || exit 2
p="$ws/proj"

# --- scripts: shebangs, relative and absolute paths, chmod +x of a new script ----------------
if group scripts; then
  printf '#!/bin/sh\necho "sh-ran $0"\n' >s.sh
  printf '#!/bin/bash\necho "bash-ran ${BASH_SOURCE[0]}"\n' >b.sh
  printf '#!/usr/bin/env python3\nimport sys\nprint("py-ran", sys.argv[0])\n' >p.py
  printf '#!/usr/bin/env node\nconsole.log("node-ran")\n' >n.js
  chmod +x s.sh b.sh p.py n.js
  task shebang-sh "sh-ran ./s.sh" "cd proj && ./s.sh"
  task shebang-bash-absolute "bash-ran $p/b.sh" "$p/b.sh"
  task shebang-env-python3 "py-ran ./p.py" "cd proj && ./p.py"
  needs shebang-env-node node && task shebang-env-node "node-ran" "proj/n.js"
  task chmod-new-script "new-ran" \
    "cd proj && printf '#!/bin/sh\necho new-ran\n' >new.sh && chmod +x new.sh && ./new.sh"
  task umask-and-modes "600 755" \
    "cd proj && umask 077 && touch u && mkdir d && chmod 755 d && stat -c %a u d | tr '\n' ' '"
fi

# --- builds ----------------------------------------------------------------------------------
if group builds; then
  mkdir -p c
  cat >c/configure <<'EOF'
#!/bin/sh
printf 'all: hello\nhello: hello.c\n\t$(CC) -o hello hello.c\ntest: hello\n\t./hello | grep -q hi && echo tests-passed\n' >Makefile
echo configured
EOF
  chmod +x c/configure
  printf '#include <stdio.h>\nint main(void){puts("hi");return 0;}\n' >c/hello.c
  task configure-make-test "tests-passed" "cd proj/c && ./configure && make && make test"
  task make-j "made-8" \
    "cd proj && mkdir -p j && cd j && for i in 1 2 3 4 5 6 7 8; do echo \"int f\$i(void){return \$i;}\" >f\$i.c; done && printf 'all: \$(patsubst %%.c,%%.o,\$(wildcard *.c))\n' >Makefile && make -s -j4 && echo made-\$(ls *.o | wc -l)"
  printf '#include <iostream>\nint main(){std::cout<<"cxx-ok"<<std::endl;}\n' >c/x.cc
  task cxx "cxx-ok" "cd proj/c && c++ -o x x.cc && ./x"
  if needs cmake-ninja cmake ninja; then
    mkdir -p cm
    printf 'cmake_minimum_required(VERSION 3.10)\nproject(p C)\nenable_testing()\nadd_executable(hello ../c/hello.c)\nadd_test(NAME t COMMAND hello)\n' >cm/CMakeLists.txt
    task cmake-ninja-ctest "100% tests passed" \
      "cd proj/cm && cmake -G Ninja -S . -B build >/dev/null && cmake --build build && cd build && ctest"
  fi
  task time-timeout-nohup "nohup-ok" \
    "cd proj && time true && ! timeout 1 sleep 5 && nohup sh -c 'echo nohup-ok' >nohup.log 2>&1 && cat nohup.log"
fi

# --- python ----------------------------------------------------------------------------------
if group python; then
  # A wheel made by hand (no setuptools, no network), installed offline into a venv.
  mkdir -p wheels
  python3 - <<'EOF'
import zipfile, hashlib, base64
files = {"acme/__init__.py": "def hello():\n    return 'acme-hello'\n",
         "acme-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: acme\nVersion: 1.0\n",
         "acme-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
record = []
with zipfile.ZipFile("wheels/acme-1.0-py3-none-any.whl", "w") as z:
    for name, text in files.items():
        z.writestr(name, text)
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(text)}")
    record.append("acme-1.0.dist-info/RECORD,,")
    z.writestr("acme-1.0.dist-info/RECORD", "\n".join(record) + "\n")
EOF
  task venv-pip-offline "acme-hello" \
    "cd proj && python3 -m venv .venv && .venv/bin/pip install -q --no-index --find-links wheels acme && .venv/bin/python -c 'import acme; print(acme.hello())'"
  if python3 -c 'import pytest' 2>/dev/null; then
    printf 'def test_ok():\n    assert 1 + 1 == 2\n' >test_p.py
    task pytest "1 passed" "cd proj && python3 -m pytest -q -p no:cacheprovider test_p.py"
  else
    echo "SKIP pytest (pytest is missing)"
  fi
  printf 'import unittest\nclass T(unittest.TestCase):\n    def test(self): self.assertTrue(True)\n' >test_u.py
  task unittest "OK" "cd proj && python3 -m unittest test_u 2>&1"
fi

# --- node ------------------------------------------------------------------------------------
if group node; then
  if needs node-npm node npm npx; then
    mkdir -p nd/node_modules/.bin nd/node_modules/greet
    printf '{"name":"nd","version":"1.0.0","scripts":{"test":"node t.js","hi":"greet"}}\n' >nd/package.json
    printf 'console.log("npm-test-ok")\n' >nd/t.js
    printf '#!/usr/bin/env node\nconsole.log("greet-ran")\n' >nd/node_modules/greet/cli.js
    printf '{"name":"greet","version":"1.0.0","bin":{"greet":"cli.js"}}\n' >nd/node_modules/greet/package.json
    chmod +x nd/node_modules/greet/cli.js
    ln -s ../greet/cli.js nd/node_modules/.bin/greet
    task npm-test "npm-test-ok" "cd proj/nd && npm test --offline"
    task npm-run-local-bin "greet-ran" "cd proj/nd && npm run -s hi --offline"
    task npx-local-bin "greet-ran" "cd proj/nd && npx --offline greet"
  fi
fi

# --- git -------------------------------------------------------------------------------------
if group git; then
  git_id="-c user.name=t -c user.email=t@example.com"
  task git-init-commit-same-run "initial" \
    "cd proj && mkdir g && cd g && git init -q && echo a >a && git add a && git $git_id commit -qm initial && git log --oneline"
  task git-everyday-in-new-repo "stash-ok" \
    "cd proj && mkdir g2 && cd g2 && git init -q -b main && echo a >a && git add a && git $git_id commit -qm one && git branch feat && git checkout -q feat && echo b >>a && git diff --stat && git stash -q && git stash pop -q && git status --short && git $git_id commit -qam two && git worktree add -q ../g2-wt main && git log --oneline --all | wc -l && echo stash-ok"
  # The sanitized copy of ~/.gitconfig: the identity is there, credentials are not.
  if email=$(git config -f ~/.gitconfig user.email 2>/dev/null); then
    task git-identity-from-home "id=$email" \
      "echo id=\$(git config --global user.email) && git config --global --get-regexp '^(url|http|credential)' || true"
  fi
  task git-read-in-existing-repo "initial" \
    "cd proj/g && git status --short && git log --oneline && git diff && git branch"
  # By design (.git is read-only at the start of a run): the refusal names --writable-git.
  out=$(cd "$ws" && "$anvil" sandbox --cwd "$ws" -- bash -c "cd proj/g && echo b >>a && git $git_id commit -qam second" 2>&1)
  if [[ $out == *"allow with --writable-git"* ]]; then
    echo "PASS git-commit-existing-repo-refused-with-the-way-past-it"
  else
    echo "FAIL git-commit-existing-repo-refused-with-the-way-past-it"
    printf '%s\n' "$out" | sed 's/^/    | /'
    failed=1
  fi
  out=$(cd "$ws" && "$anvil" sandbox --writable-git --cwd "$ws" -- bash -c "cd proj/g && git $git_id commit -qam second && git log --oneline | head -1" 2>&1)
  [[ $out == *second* ]] && echo "PASS git-commit-with--writable-git" || { echo "FAIL git-commit-with--writable-git"; printf '%s\n' "$out" | sed 's/^/    | /'; failed=1; }
fi

# --- tools in the home -------------------------------------------------------------------------
if group system; then
  # Nothing of the caller's secrets (the test greps this output for them).
  task secrets-stay-hidden "scanned" "grep -rsI -e CRED -e TOKEN -e BEGIN ~ /var/tmp 2>/dev/null | head -5; echo scanned"
  task home-is-writable "cache-ok" \
    "mkdir -p ~/.cache/x && echo cache-ok >~/.cache/x/f && cat ~/.cache/x/f"
fi

# --- loopback --------------------------------------------------------------------------------
if group system; then
  task test-server-loopback "v4-ok v6-ok name-ok" \
    "python3 - <<'EOF'
import http.server, threading, urllib.request, socket
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b'ok')
    def log_message(self, *a): pass
class V6(http.server.HTTPServer): address_family = socket.AF_INET6
res = []
for cls, host, url, tag in ((http.server.HTTPServer, '127.0.0.1', '127.0.0.1', 'v4'), (V6, '::1', '[::1]', 'v6'), (http.server.HTTPServer, 'localhost', 'localhost', 'name')):
    s = cls((host, 0), H); threading.Thread(target=s.serve_forever, daemon=True).start()
    u = 'http://%s:%d/' % (url, s.server_address[1])
    res.append(tag + '-' + urllib.request.urlopen(u, timeout=10).read().decode())
    s.shutdown()
print(' '.join(res))
EOF"
fi

# --- system tools without sudo ---------------------------------------------------------------
if group system; then
  task id-ps-top "top-ok" "id && ps aux >/dev/null && ps -ef | head -2 && top -b -n1 >/dev/null && echo top-ok"
  task find-root "find-ok" "find / -name passwd 2>/dev/null | head -1; echo find-ok"
  task df-locale "locale-ok" "df -h . >/dev/null && df >/dev/null && locale >/dev/null && echo locale-ok"
  needs man man && task man "NAME" "MANPAGER=cat man 1 ls 2>&1 | head -5"
  task tar-zip "zip-ok" \
    "cd proj && echo a >ta && tar czf t.tgz ta && tar tzf t.tgz >/dev/null && { ! command -v zip >/dev/null || { zip -q z.zip ta && unzip -o -q z.zip -d uz && test -f uz/ta; }; } && echo zip-ok"
  needs sqlite3 sqlite3 && task sqlite3 "42" "cd proj && sqlite3 db.sqlite 'create table t(x); insert into t values(42); select x from t;'"
  needs ssh-keygen ssh-keygen && task ssh-keygen-into-workspace "id_test.pub" \
    "cd proj && ssh-keygen -q -t ed25519 -N '' -f id_test && ls id_test.pub"
  task watch-g "watch-ok" \
    "cd proj && (sleep 1; echo x >w) & command -v watch >/dev/null && { timeout 20 watch -n1 -g 'cat w 2>/dev/null' >/dev/null 2>&1 || true; }; wait; echo watch-ok"
  task flock-fifo-setsid "fifo-ok" \
    "cd proj && flock lk true && mkfifo ff && (echo fifo-ok >ff &) && cat ff && setsid -w true"
  task script-pty "pty-ok" "script -qec 'tty >/dev/null && echo pty-ok' /dev/null"
  task less-vi-with-a-tty "vi-ok" \
    "cd proj && echo hello >l.txt && script -qec 'less -FX l.txt' /dev/null >/dev/null && script -qec 'vi -c \"s/hello/vi-ok/\" -c wq l.txt' /dev/null >/dev/null 2>&1; cat l.txt"
  task bash-i-job-control "jobs-ok" \
    "script -qec \"bash --norc -i -c 'sleep 3 & jobs >/dev/null; kill %1; echo jobs-ok'\" /dev/null"
  task crontab-fails-gracefully "cron-ok" "crontab -l >/dev/null 2>&1; echo cron-ok"
  task dev-shm-tmp "shm-ok" "echo shm-ok >/dev/shm/x && cat /dev/shm/x && echo t >/tmp/t && cat /tmp/t >/dev/null"
fi

# --- files: large, many, links -----------------------------------------------------------------
if group files; then
  task large-file "1073741824" "cd proj && truncate -s 1G big && dd if=/dev/zero of=big2 bs=1M count=64 status=none && stat -c %s big && rm big big2"
  task many-files "5000" "cd proj && mkdir many && cd many && seq 1 5000 | xargs touch && ls | wc -l"
  task symlinks-in-workspace "link-ok" \
    "cd proj && mkdir -p sl/a && echo link-ok >sl/a/f && ln -s a/f sl/l && ln -s ../sl/a sl/d && cat sl/l && cat sl/d/f >/dev/null"
fi

# --- $HOME toolchains (a home laid out by the caller: skipped unless present) --------------------
if group scripts; then
  # Each tool of the caller's PATH that lives in a toolchain directory of the home runs inside.
  for t in .local/bin .cargo/bin .pyenv/shims .nvm/versions/node/*/bin go/bin; do
    for d in $HOME/$t; do
      [[ -d $d && ":$PATH:" == *":$d:"* ]] || continue
      for f in "$d"/*; do
        [[ -x $f && -f $f ]] || continue
        n=${f##*/}
        [[ $n == python3 ]] && arg=-V || arg=
        task "home-tool-${t%%/*}-$n" "" "$n $arg"
        # A login shell (Codex runs `bash -lc`): /etc/profile may reset PATH; the sandbox home's
        # profile puts it back. (A workspace that is the home shows the user's own start-up
        # files, as outside.)
        [[ $mode == home ]] || task "home-tool-login-shell-${t%%/*}-$n" "" "bash -lc '$n $arg'"
        break
      done
    done
  done
fi

echo "mode=$mode"
exit $failed
