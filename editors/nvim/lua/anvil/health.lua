-- :checkhealth anvil — is anvil there (and which), can this machine sandbox plugins (anvil
-- doctor), are the configured plugin directories plugins, and is the session's gateway up.
local M = {}

-- vim.health (0.8+; start/ok/... since 0.10) or the `health` module of Neovim 0.7.
local function reporter()
  local h = vim.health or require('health')
  return {
    start = h.start or h.report_start,
    ok = h.ok or h.report_ok,
    info = h.info or h.report_info,
    warn = h.warn or h.report_warn,
    error = h.error or h.report_error,
  }
end

-- Runs argv; returns the exit code and the output (stdout and stderr), bounded in time.
local function run(argv, timeout_ms)
  local out = {}
  local ok, job = pcall(vim.fn.jobstart, argv, {
    stdout_buffered = true, stderr_buffered = true,
    on_stdout = function(_, data) vim.list_extend(out, data) end,
    on_stderr = function(_, data) vim.list_extend(out, data) end,
  })
  if not ok or job <= 0 then return nil, {} end
  local code = vim.fn.jobwait({job}, timeout_ms)[1]
  if code == -1 then
    vim.fn.jobstop(job)
    return nil, {'(no answer within ' .. timeout_ms .. ' ms)'}
  end
  local lines = {}
  for _, l in ipairs(out) do
    if l ~= '' then lines[#lines + 1] = require('anvil.ui').sanitize(l) end
  end
  return code, lines
end

function M.check()
  local r = reporter()
  local anvil = require('anvil')

  r.start('anvil binary')
  local cmd, why = anvil.command()
  if not cmd then
    r.error(why)
    return
  end
  r.ok('found: ' .. vim.fn.exepath(cmd[1]))
  local argv = vim.deepcopy(cmd)
  argv[#argv + 1] = '--version'
  local code, lines = run(argv, 5000)
  if code == 0 and lines[1] then
    r.ok('version: ' .. lines[1])
  else
    r.info('version: unknown (this anvil has no --version)')
  end

  r.start('sandbox (anvil doctor)')
  argv = vim.deepcopy(cmd)
  argv[#argv + 1] = 'doctor'
  code, lines = run(argv, 20000)
  if code == nil then
    r.error('anvil doctor did not run: ' .. table.concat(lines, ' '))
  else
    local summary = lines[#lines] or '(no output)'
    for _, l in ipairs(lines) do
      if l:match('^MISSING') or l:match('^degraded') then r.warn(l) end
    end
    if code == 0 then
      r.ok(summary)
    else
      r.error(summary, {'run `anvil doctor` in a terminal: it says which layer and how to fix it'})
    end
  end

  r.start('plugins')
  local dirs = anvil.config.plugin_dirs or {}
  if #dirs == 0 then
    r.info('no plugin_dirs set; plugins come from --plugin-path and '
           .. '~/.local/share/anvil/plugins, enabled by the workspace\'s Anvil.toml')
  end
  for _, d in ipairs(dirs) do
    local manifest = vim.fn.expand(d) .. '/anvil-plugin.toml'
    if vim.fn.filereadable(manifest) == 1 then
      r.ok('plugin_dirs: ' .. d)
    else
      r.error('plugin_dirs: ' .. d .. ' has no anvil-plugin.toml',
              {'point plugin_dirs at a plugin directory (`anvil plugin new` makes one)'})
    end
  end
  for _, d in ipairs(anvil.config.plugin_path or {}) do
    if vim.fn.isdirectory(vim.fn.expand(d)) == 1 then
      r.ok('plugin_path: ' .. d)
    else
      r.warn('plugin_path: ' .. d .. ' is not a directory')
    end
  end

  r.start('session (anvil serve)')
  local s = anvil.session()
  if not s then
    r.info('not running: it starts on the first :AnvilRun, :AnvilPlugins or :AnvilStart')
    return
  end
  r.ok('workspace: ' .. s.workspace)
  local status = anvil.status_sync()
  local gw = type(status) == 'table' and status.gateway or nil
  if type(gw) ~= 'table' then
    r.error('anvil/status did not answer')
  elseif type(gw.error) == 'string' and gw.error ~= '' then
    r.error('gateway: ' .. require('anvil.ui').sanitize(gw.error))
  else
    r.ok(string.format('gateway: running (pid %s, %s restarts)', tostring(gw.pid),
                       tostring(gw.restarts or 0)))
  end
  for _, p in ipairs(type(status) == 'table' and status.plugins or {}) do
    r.info(string.format('%s: %s', require('anvil.ui').sanitize(p.id),
                         require('anvil.ui').sanitize(p.state)))
  end
end

return M
