-- Test harness for the Neovim client, loaded by each case (run.sh starts
-- `nvim --headless --clean` with editors/nvim on 'runtimepath', exactly as a user installs it).
-- vim.notify and vim.ui.select are replaced the way notification and picker plugins do, so the
-- case can see what the user would see and answer the consent prompt. Every wait is on a
-- condition (vim.wait) with a generous bound; nothing sleeps to synchronise.
local t = {}

t.repo = assert(os.getenv('ANVIL_TEST_REPO'))
t.ws = assert(vim.loop.fs_realpath(assert(os.getenv('ANVIL_TEST_WS'))))
t.bin = assert(os.getenv('ANVIL_BIN'))
t.pids_file = assert(os.getenv('ANVIL_TEST_PIDS'))
t.examples = t.repo .. '/examples/plugins'
t.test_plugins = t.repo .. '/tests/editors/plugins'

t.notes = {}
vim.notify = function(msg, level, opts)
  t.notes[#t.notes + 1] = {msg = msg, level = level, title = opts and opts.title}
  io.stderr:write('notify: ' .. tostring(msg) .. '\n')
end

t.consents = {}
t.consent_answer = 'approve'
vim.ui.select = function(items, opts, on_choice)
  local win = require('anvil.ui').consent_window
  local shown = {}
  if win and vim.api.nvim_win_is_valid(win.win) then
    shown = vim.api.nvim_buf_get_lines(win.bufnr, 0, -1, true)
  end
  t.consents[#t.consents + 1] = {items = items, prompt = opts.prompt, lines = shown,
                                 float = win and vim.api.nvim_win_get_config(win.win) or nil}
  local answer = t.consent_answer
  -- Answer later, like a real picker: the prompt is asynchronous.
  vim.schedule(function() on_choice(answer) end)
end

function t.fail(what) error(what, 2) end

function t.ok(cond, what)
  if not cond then error('check failed: ' .. what, 2) end
end

function t.eq(got, want, what)
  if not vim.deep_equal(got, want) then
    error(string.format('%s: got %s, want %s', what, vim.inspect(got), vim.inspect(want)), 2)
  end
end

function t.wait(cond, what, ms)
  if not vim.wait(ms or 30000, cond, 20) then error('timed out waiting for ' .. what, 2) end
end

-- The first captured notification containing `needle` (plain text), or nil.
function t.note(needle)
  for _, n in ipairs(t.notes) do
    if tostring(n.msg):find(needle, 1, true) then return n end
  end
end

function t.setup(opts)
  require('anvil').setup(vim.tbl_extend('force', {cmd = {t.bin}}, opts or {}))
end

function t.plugin(id)
  for _, p in ipairs(require('anvil').list_plugins_sync().plugins) do
    if p.id == id then return p end
  end
end

function t.wait_state(id, state)
  t.wait(function() return (t.plugin(id) or {}).state == state end, id .. ' to be ' .. state)
end

-- Runs `:AnvilRun ...` and waits until it is answered; returns the run.
function t.run_command(line)
  local s = require('anvil').session()
  local before = s and #s.history or 0
  vim.cmd('AnvilRun ' .. line)
  s = assert(require('anvil').session(), 'no session after :AnvilRun')
  local run = assert(s.history[before + 1], ':AnvilRun ' .. line .. ' started nothing')
  t.wait(function() return run.done end, ':AnvilRun ' .. line .. ' to finish')
  return run
end

-- Every process of the session (anvil serve, the gateway, the plugin hosts), for run.sh to
-- check that none is left once Neovim has exited.
function t.record_pids(extra)
  local f = assert(io.open(t.pids_file, 'a'))
  local s = require('anvil').session()
  if s then
    f:write(s.client.pid, '\n')
    local status = require('anvil').status_sync()
    if status then
      if status.gateway and status.gateway.pid then f:write(status.gateway.pid, '\n') end
      for _, p in ipairs(status.plugins or {}) do
        if p.pid then f:write(p.pid, '\n') end
      end
    end
  end
  for _, pid in ipairs(extra or {}) do f:write(pid, '\n') end
  f:close()
end

-- Runs the case; on success quits normally, so the plugin's VimLeavePre stops the session (the
-- path a user takes); on failure stops it explicitly and exits non-zero.
function t.run(fn)
  local ok, err = xpcall(fn, debug.traceback)
  if ok then
    ok, err = pcall(t.record_pids)
  end
  if ok then
    io.stderr:write('PASS\n')
    vim.cmd('qall!')
  else
    io.stderr:write('FAIL: ' .. tostring(err) .. '\n')
    pcall(t.record_pids)
    pcall(require('anvil').stop)
    vim.cmd('cquit 1')
  end
end

return t
