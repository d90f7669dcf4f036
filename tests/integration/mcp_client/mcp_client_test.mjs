// `anvil mcp` driven by the real client: the official MCP TypeScript SDK
// (@modelcontextprotocol/sdk, pinned in scripts/npm, installed into ANVIL_NPM_DIR by
// scripts/install-deps.sh). Run by ctest (tests/integration/CMakeLists.txt) as
//   node mcp_client_test.mjs            with ANVIL_BIN and ANVIL_NPM_DIR set.
// Each case prints "ok - NAME" or throws; the process exits non-zero on the first failure.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import assert from 'node:assert/strict';

const anvil = process.env.ANVIL_BIN;
const npmDir = process.env.ANVIL_NPM_DIR;
assert.ok(anvil && npmDir, 'set ANVIL_BIN and ANVIL_NPM_DIR');
const sdk = path.join(npmDir, 'node_modules/@modelcontextprotocol/sdk/dist/esm');
if (!fs.existsSync(sdk)) {
  console.error(`@modelcontextprotocol/sdk is not installed in ${npmDir} ` +
                '(fix: bash scripts/install-deps.sh)');
  process.exit(1);
}
const { Client } = await import(path.join(sdk, 'client/index.js'));
const { StdioClientTransport } = await import(path.join(sdk, 'client/stdio.js'));
const { ElicitRequestSchema, McpError } = await import(path.join(sdk, 'types.js'));

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'anvil-mcp-'));
const ws = path.join(root, 'ws');
const plugin = path.join(root, 'plugin');
const home = path.join(root, 'home');
for (const d of [ws, plugin, home]) fs.mkdirSync(d, { recursive: true });
const env = {
  PATH: '/usr/bin:/bin',
  HOME: home,
  XDG_CONFIG_HOME: path.join(home, 'config'),
  XDG_STATE_HOME: path.join(home, 'state'),
  XDG_DATA_HOME: path.join(home, 'data'),
};
spawnSync('git', ['init', '-q', ws]);
fs.writeFileSync(path.join(ws, 'a.txt'), 'alpha\n');
fs.mkdirSync(path.join(ws, 'sub'));
fs.writeFileSync(path.join(ws, 'sub', 'b.txt'), 'beta\n');
const rules = path.join(root, 'rules.toml');
fs.writeFileSync(rules, `[[rule]]
pattern = ["echo", "ask-me"]
decision = "prompt"
justification = "the test asks the client"
match = ["echo ask-me now"]
`);
// A tiny Lua plugin, approved the way scripts do it (anvil run --approve).
fs.writeFileSync(path.join(plugin, 'anvil-plugin.toml'),
  'id = "test.mcp"\nversion = "1.0.0"\nruntime = "lua"\nentry = "main.lua"\n\n' +
  '[permissions]\nfs.read = ["**"]\n');
fs.writeFileSync(path.join(plugin, 'main.lua'),
  "anvil.command('hello', function(args) return 'hello ' .. (args[1] or 'world') end)\n" +
  "anvil.command('read', function(args) return sys.fs.read(args[1]) end)\n" +
  // Busy for as long as it is let be: each turn waits on the gateway, so the instruction
  // budget (which would end a bare `while true do end` within seconds of CPU) lasts minutes.
  "anvil.command('spin', function() while true do sys.fs.read('a.txt') end end)\n");
// Its benign neighbour's opposite: a plugin nobody approved is not offered.
const unapproved = path.join(root, 'unapproved');
fs.mkdirSync(unapproved);
fs.writeFileSync(path.join(unapproved, 'anvil-plugin.toml'),
  'id = "test.unapproved"\nversion = "1.0.0"\nruntime = "lua"\nentry = "main.lua"\n');
fs.writeFileSync(path.join(unapproved, 'main.lua'), "anvil.command('x', function() return 1 end)\n");
const approved = spawnSync(anvil, ['run', '--workspace', ws, '--approve', plugin, 'hello'],
                           { env, encoding: 'utf8' });
assert.equal(approved.status, 0, approved.stderr);

let answers = [];
async function connect(extra = [], capabilities = { elicitation: {} }, useRules = true) {
  const client = new Client({ name: 'anvil-test', version: '1.0.0' }, { capabilities });
  if (capabilities.elicitation) {
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      const next = answers.shift() ?? { action: 'cancel' };
      next.seen = request.params;
      return { action: next.action, content: next.content };
    });
  }
  const transport = new StdioClientTransport({
    command: anvil,
    args: ['mcp', '--workspace', ws, ...(useRules ? ['--rules', rules] : []),
           '--plugin-dir', plugin, '--plugin-dir', unapproved, ...extra],
    env,
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (d) => { stderr += d; });
  await client.connect(transport);
  client.stderrText = () => stderr;
  return client;
}

async function runCase(name, fn) {
  await fn();
  console.log(`ok - ${name}`);
}

const client = await connect();
const version = client.getServerVersion();
assert.equal(version.name, 'anvil');

await runCase('tools/list lists run_command and the approved plugin', async () => {
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name);
  assert.ok(names.includes('run_command'), names.join(','));
  assert.ok(names.includes('plugin__test_mcp__hello'), names.join(','));
  assert.ok(names.includes('plugin__test_mcp__read'), names.join(','));
  assert.ok(names.includes('plugin__test_mcp__spin'), names.join(','));
  assert.ok(!names.some((n) => n.includes('unapproved')), names.join(','));
  assert.match(client.stderrText(), /plugin test\.unapproved not offered: no approved grant/);
  const run = tools.find((t) => t.name === 'run_command');
  assert.equal(run.inputSchema.type, 'object');
  assert.ok(run.outputSchema && run.outputSchema.properties.exit_code);
  for (const n of names) assert.match(n, /^[A-Za-z0-9_.-]{1,64}$/);
});

await runCase('a command that succeeds', async () => {
  const r = await client.callTool({ name: 'run_command', arguments: { argv: ['cat', 'a.txt'] } });
  assert.equal(r.isError, false, JSON.stringify(r));
  assert.equal(r.structuredContent.exit_code, 0);
  assert.equal(r.structuredContent.stdout, 'alpha\n');
  assert.match(r.content[0].text, /alpha/);
});

await runCase('cwd inside the workspace, and outside it', async () => {
  const r = await client.callTool({ name: 'run_command',
                                    arguments: { argv: ['cat', 'b.txt'], cwd: 'sub' } });
  assert.equal(r.structuredContent.stdout, 'beta\n', JSON.stringify(r));
  const out = await client.callTool({ name: 'run_command',
                                      arguments: { argv: ['ls'], cwd: '/etc' } });
  assert.equal(out.isError, true);
  assert.match(out.content[0].text, /outside the workspace/);
});

await runCase('the sandbox refuses a write to .git/config and offers --writable-git', async () => {
  const r = await client.callTool({ name: 'run_command',
                                    arguments: { argv: ['cp', 'a.txt', '.git/config'] } });
  const s = r.structuredContent;
  assert.notEqual(s.exit_code, 0, JSON.stringify(s));
  assert.ok(s.sandbox_refusals.length > 0, JSON.stringify(s));
  assert.deepEqual(s.escalation.widening.flags, ['--writable-git']);
  assert.equal(s.escalation.widen_argument, 'writable-git');
  assert.doesNotMatch(fs.readFileSync(path.join(ws, '.git', 'config'), 'utf8'), /alpha/);
});

await runCase('the agent asks for the widening with a reason; the user approves it once', async () => {
  answers = [{ action: 'accept', content: { answer: 'once' } }];
  const asked = answers[0];
  const r = await client.callTool({ name: 'run_command', arguments: {
    argv: ['cp', 'a.txt', '.git/anvil-widened'], widen: 'writable-git',
    reason: 'the test needs it' } });
  assert.equal(r.isError, false, JSON.stringify(r));
  assert.equal(r.structuredContent.exit_code, 0, JSON.stringify(r));
  assert.match(asked.seen.message, /--writable-git/);
  assert.match(asked.seen.message, /the test needs it/);
  assert.equal(fs.readFileSync(path.join(ws, '.git', 'anvil-widened'), 'utf8'), 'alpha\n');
  // Declined: nothing runs.
  answers = [{ action: 'decline' }];
  const no = await client.callTool({ name: 'run_command', arguments: {
    argv: ['cp', 'a.txt', '.git/anvil-declined'], widen: 'writable-git', reason: 'again' } });
  assert.equal(no.isError, true, JSON.stringify(no));
  assert.ok(!fs.existsSync(path.join(ws, '.git', 'anvil-declined')));
});

await runCase('a script is judged command by command and runs as bash -c', async () => {
  const r = await client.callTool({ name: 'run_command',
                                    arguments: { script: 'cat a.txt && echo done' } });
  assert.equal(r.isError, false, JSON.stringify(r));
  assert.equal(r.structuredContent.stdout, 'alpha\ndone\n');
  // Attack: a command plants a login profile in the sandbox home; a harmless script must not
  // run it (a login shell would: code the rules never judged).
  const plant = await client.callTool({ name: 'run_command', arguments: { argv: [
    'python3', '-c', 'import os\nfor f in (".bash_profile", ".profile", ".bash_login"):\n' +
    '  open(os.path.join(os.environ["HOME"], f), "a").write("echo PROFILE_RAN\\n")'] } });
  assert.equal(plant.isError, false, JSON.stringify(plant));
  const after = await client.callTool({ name: 'run_command', arguments: { script: 'echo clean' } });
  assert.equal(after.structuredContent.stdout, 'clean\n', JSON.stringify(after));
});

await runCase('a prompt rule asks the client: accept once runs it', async () => {
  answers = [{ action: 'accept', content: { answer: 'once' } }];
  const pending = answers[0];
  const r = await client.callTool({ name: 'run_command',
                                    arguments: { argv: ['echo', 'ask-me', 'now'] } });
  assert.equal(r.isError, false, JSON.stringify(r));
  assert.equal(r.structuredContent.stdout, 'ask-me now\n');
  assert.match(pending.seen.message, /echo ask-me now/);
  assert.deepEqual(pending.seen.requestedSchema.properties.answer.enum, ['once', 'never']);
});

await runCase('progress notifications come while a call with a progress token runs', async () => {
  const seen = [];
  const r = await client.callTool({ name: 'run_command', arguments: { argv: ['cat', 'a.txt'] } },
                                  undefined, { onprogress: (p) => seen.push(p) });
  assert.equal(r.structuredContent.exit_code, 0);
  assert.ok(seen.length >= 1, 'no progress notification');
  assert.match(seen[0].message, /sandbox/);
  for (let i = 1; i < seen.length; i++) assert.ok(seen[i].progress > seen[i - 1].progress);
});

await runCase('a prompt rule asks the client: decline refuses it', async () => {
  answers = [{ action: 'decline' }];
  const r = await client.callTool({ name: 'run_command',
                                    arguments: { argv: ['echo', 'ask-me', 'again'] } });
  assert.equal(r.isError, true, JSON.stringify(r));
  assert.equal(r.structuredContent.refused, true);
  assert.equal(r.structuredContent.ran, false);
  assert.match(r.content[0].text, /refused/);
});

await runCase('an approved plugin command runs as anvil run would', async () => {
  const r = await client.callTool({ name: 'plugin__test_mcp__hello', arguments: { args: ['mcp'] } });
  assert.equal(r.isError, false, JSON.stringify(r));
  assert.equal(r.content[0].text, 'hello mcp');
  const read = await client.callTool({ name: 'plugin__test_mcp__read',
                                       arguments: { args: ['a.txt'] } });
  assert.equal(read.content[0].text, 'alpha\n', JSON.stringify(read));
});

function sleepersAlive(marker) {
  let alive = 0;
  for (const pid of fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (cmd === `sleep\0${marker}\0`) alive++;
    } catch { /* gone */ }
  }
  return alive;
}

await runCase('cancelling a long command kills its process tree', async () => {
  const marker = `${30 + Math.random()}`.slice(0, 8);
  const controller = new AbortController();
  const call = client.callTool({ name: 'run_command', arguments: { argv: ['sleep', marker] } },
                               undefined, { signal: controller.signal });
  let seen = false;
  for (let i = 0; i < 100 && !seen; i++) {
    await new Promise((r) => setTimeout(r, 100));
    seen = sleepersAlive(marker) > 0;
  }
  assert.ok(seen, 'the sleep never started');
  controller.abort('test');
  await assert.rejects(call);
  let alive = 1;
  for (let i = 0; i < 100 && alive > 0; i++) {
    await new Promise((r) => setTimeout(r, 100));
    alive = sleepersAlive(marker);
  }
  assert.equal(alive, 0, 'the cancelled sleep is still running');
  await client.ping();  // still serving
});

// Processes other than the servers themselves whose command line names this test's directory.
function helpersAlive() {
  let alive = [];
  for (const pid of fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const cmd = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (cmd.includes(root) && !cmd.split('\0').includes('mcp')) alive.push(cmd);
    } catch { /* gone */ }
  }
  return alive;
}

await runCase('cancelling a plugin command stops anvil run and its session', async () => {
  const controller = new AbortController();
  const call = client.callTool({ name: 'plugin__test_mcp__spin', arguments: {} }, undefined,
                               { signal: controller.signal });
  let seen = false;
  for (let i = 0; i < 100 && !seen; i++) {
    await new Promise((r) => setTimeout(r, 100));
    seen = helpersAlive().length > 0;
  }
  assert.ok(seen, 'anvil run never started');
  await new Promise((r) => setTimeout(r, 500));
  controller.abort('test');
  await assert.rejects(call);
  let alive = ['?'];
  for (let i = 0; i < 100 && alive.length > 0; i++) {
    await new Promise((r) => setTimeout(r, 100));
    alive = helpersAlive();
  }
  assert.deepEqual(alive, [], 'left running after the cancel');
});

await runCase('a timeout kills the command and says so', async () => {
  const r = await client.callTool({ name: 'run_command',
                                    arguments: { argv: ['sleep', '20'], timeout_ms: 500 } });
  assert.equal(r.structuredContent.timed_out, true, JSON.stringify(r));
  assert.equal(r.structuredContent.exit_code, 124);
});

async function rejectsWith(promise, code, pattern) {
  await assert.rejects(promise, (e) => {
    assert.ok(e instanceof McpError, String(e));
    assert.equal(e.code, code, e.message);
    assert.match(e.message, pattern);
    return true;
  });
}

await runCase('bad input gets a clear error and the server keeps serving', async () => {
  await rejectsWith(client.callTool({ name: 'run_command', arguments: { argv: 5 } }),
                    -32602, /arguments\.argv: expected an array of strings/);
  await rejectsWith(client.callTool({ name: 'run_command', arguments: { argv: ['ls', 7] } }),
                    -32602, /arguments\.argv\[1\]/);
  await rejectsWith(client.callTool({ name: 'no_such_tool', arguments: {} }),
                    -32602, /unknown tool/);
  await rejectsWith(client.callTool({ name: 'run_command',
                                      arguments: { argv: ['ls'], timeout_ms: 'soon' } }),
                    -32602, /timeout_ms/);
  await rejectsWith(client.callTool({ name: 'run_command',
                                      arguments: { argv: ['echo', 'x'.repeat(5 << 20)] } }),
                    -32600, /message too long.*4 MiB/);
  const r = await client.callTool({ name: 'run_command', arguments: { argv: ['cat', 'a.txt'] } });
  assert.equal(r.structuredContent.stdout, 'alpha\n');
});

await runCase('invalid UTF-8 in the output is replaced, the JSON stays valid', async () => {
  const r = await client.callTool({ name: 'run_command',
                                    arguments: { argv: ['printf', 'a\\377b'] } });
  assert.equal(r.structuredContent.stdout, 'a\uFFFDb', JSON.stringify(r));
});

await runCase('every decision and answer is an audit line by anvil mcp', async () => {
  // Large: the cancelled `spin` above left one audit line per read it made.
  const audit = spawnSync(anvil, ['audit', '--workspace', ws, '--json'],
                          { env, encoding: 'utf8', maxBuffer: 512 << 20 });
  assert.equal(audit.status, 0, audit.stderr);
  const lines = audit.stdout.trim().split('\n').map((l) => JSON.parse(l));
  const ours = lines.filter((l) => JSON.stringify(l).includes('anvil mcp'));
  assert.ok(ours.some((l) => l.op === 'command'), audit.stdout);
  assert.ok(ours.some((l) => l.op === 'command.answer'), audit.stdout);
});

await client.close();

await runCase('untrusted mode: "always" writes an allow rule, the next call is not asked', async () => {
  // Without --rules: the user's rules directory, where "always" writes approved.toml.
  const strict = await connect(['--approval', 'untrusted'], { elicitation: {} }, false);
  answers = [{ action: 'accept', content: { answer: 'always' } }];
  const first = answers[0];
  const r = await strict.callTool({ name: 'run_command',
                                    arguments: { argv: ['touch', 'made-by-agent'] } });
  assert.equal(r.isError, false, JSON.stringify(r));
  assert.deepEqual(first.seen.requestedSchema.properties.answer.enum, ['once', 'always', 'never']);
  assert.ok(fs.existsSync(path.join(ws, 'made-by-agent')));
  const approved = fs.readFileSync(path.join(home, 'config', 'anvil', 'rules', 'approved.toml'),
                                   'utf8');
  assert.match(approved, /touch/);
  answers = [];  // a question now would be cancelled, and so refused
  const again = await strict.callTool({ name: 'run_command',
                                        arguments: { argv: ['touch', 'made-by-agent'] } });
  assert.equal(again.isError, false, JSON.stringify(again));
  assert.equal(again.structuredContent.report.questions.length, 0);
  await strict.close();
});

await runCase('without elicitation a prompt rule is refused with the way to allow it', async () => {
  const plain = await connect([], {});
  const r = await plain.callTool({ name: 'run_command',
                                   arguments: { argv: ['echo', 'ask-me', 'x'] } });
  assert.equal(r.isError, true);
  assert.match(r.structuredContent.how_to_allow, /elicitation/);
  await plain.close();
});

await runCase('everyday scripts run with nobody to ask; a workspace rule on rm still refuses',
              async () => {
  // The default mode (on-request) and a client without elicitation: a prompt is refused.
  fs.mkdirSync(path.join(ws, '.anvil'), { recursive: true });
  fs.writeFileSync(path.join(ws, '.anvil', 'rules.toml'),
                   '[[rule]]\npattern = ["rm"]\ndecision = "prompt"\n' +
                   'justification = "deleting needs a question"\n');
  const plain = await connect([], {});
  const everyday = [
    ['echo hi > f.txt && cat f.txt', 'hi\n'],
    ["cat > g.txt <<'EOF'\nline $HOME $(id)\nEOF\ncat g.txt", 'line $HOME $(id)\n'],
    ['ls sub/*.txt > list.txt 2>&1; cat list.txt', 'sub/b.txt\n'],
    // (printf, not echo: this file's prompt rule on `echo ask-me` could match "$f".)
    ["for f in sub/*.txt; do printf '%s\\n' \"$f\"; done", 'sub/b.txt\n'],
    ['cd "$PWD/sub" && x=1 ls', 'b.txt\n'],
  ];
  for (const [script, out] of everyday) {
    const r = await plain.callTool({ name: 'run_command', arguments: { script } });
    assert.equal(r.isError, false, `${script}: ${JSON.stringify(r)}`);
    assert.equal(r.structuredContent.stdout, out, script);
  }
  for (const script of ['for f in a.txt; do rm -rf "$f"; done', 'rm *', 'X=a.txt; rm "$X"']) {
    const r = await plain.callTool({ name: 'run_command', arguments: { script } });
    assert.equal(r.isError, true, `${script}: ${JSON.stringify(r)}`);
    assert.equal(r.structuredContent.refused, true, script);
    assert.match(r.content[0].text, /needs approval by/, script);
    assert.ok(fs.existsSync(path.join(ws, 'a.txt')), script);
  }
  await plain.close();
  fs.rmSync(path.join(ws, '.anvil'), { recursive: true, force: true });
  for (const f of ['f.txt', 'g.txt', 'list.txt']) fs.rmSync(path.join(ws, f), { force: true });
});

await runCase('with no prompt or forbidden rule anywhere, a script not understood runs sandboxed',
              async () => {
  // An admin layer on this machine may restrict: then this case has nothing to show.
  if (fs.existsSync('/etc/anvil/rules')) {
    console.log('# SKIPPED: /etc/anvil/rules exists (an admin layer)');
    return;
  }
  // Only the user's allow rules (approved.toml) and no workspace file: nothing restricts.
  const bare = await connect([], {}, false);
  const idioms = [
    ['[[ $n -eq 0 ]] && echo y', 'y\n'],
    ['echo $((n+1))', '1\n'],
    ['f() { echo f; }; f', 'f\n'],
  ];
  for (const [script, out] of idioms) {
    const r = await bare.callTool({ name: 'run_command', arguments: { script } });
    assert.equal(r.isError, false, `${script}: ${JSON.stringify(r)}`);
    assert.equal(r.structuredContent.decision, 'none', script);
    assert.equal(r.structuredContent.stdout, out, script);
  }
  // One prompt rule in any layer, about any program, and it is a question again: refused here.
  fs.mkdirSync(path.join(ws, '.anvil'), { recursive: true });
  fs.writeFileSync(path.join(ws, '.anvil', 'rules.toml'),
                   '[[rule]]\npattern = ["git", "push"]\ndecision = "prompt"\n' +
                   'justification = "talks to the remote"\n');
  const r = await bare.callTool({ name: 'run_command', arguments: { script: 'echo ${V:-y}' } });
  assert.equal(r.isError, true, JSON.stringify(r));
  assert.equal(r.structuredContent.refused, true);
  assert.match(r.content[0].text, /not fully understood/);
  await bare.close();
  fs.rmSync(path.join(ws, '.anvil'), { recursive: true, force: true });
});

// A raw server (no SDK) running `sleep MARKER` as a call: the child, and a promise of its exit
// code (null when killed by a signal).
async function serverWithASleeper(base) {
  const marker = `${base + Math.random()}`.slice(0, 8);
  const child = spawn(anvil, ['mcp', '--workspace', ws, '--no-plugins'], { env });
  const send = (m) => child.stdin.write(JSON.stringify(m) + '\n');
  send({ jsonrpc: '2.0', id: 1, method: 'initialize',
         params: { protocolVersion: '2025-06-18', capabilities: {},
                   clientInfo: { name: 't', version: '1' } } });
  send({ jsonrpc: '2.0', id: 2, method: 'tools/call',
         params: { name: 'run_command', arguments: { argv: ['sleep', marker] } } });
  for (let i = 0; i < 100 && sleepersAlive(marker) === 0; i++) {
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.ok(sleepersAlive(marker) > 0, 'the sleep never started');
  const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
  return { marker, child, exited };
}

await runCase('stdin EOF stops running calls and exits 0', async () => {
  const { marker, child, exited } = await serverWithASleeper(40);
  child.stdin.end();
  assert.equal(await exited, 0);
  assert.equal(sleepersAlive(marker), 0, 'the sleep outlived the server');
});

// A client stops its server with a signal as often as by closing stdin; and a server that is
// killed outright (or crashes) must not leave a command running either.
for (const [signal, expected] of [['SIGTERM', 143], ['SIGHUP', 129], ['SIGKILL', null]]) {
  await runCase(`${signal} to the server stops running calls`, async () => {
    const { marker, child, exited } = await serverWithASleeper(50);
    child.kill(signal);
    assert.equal(await exited, expected);
    let alive = 1;
    for (let i = 0; i < 50 && alive > 0; i++) {
      await new Promise((r) => setTimeout(r, 100));
      alive = sleepersAlive(marker);
    }
    assert.equal(alive, 0, `the sleep outlived the server (${signal})`);
  });
}

fs.rmSync(root, { recursive: true, force: true });
console.log('all ok');
