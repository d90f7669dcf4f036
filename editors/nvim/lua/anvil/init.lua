-- Anvil for Neovim: runs `anvil serve` for the workspace and drives it (docs/protocol.md,
-- section 4). Plugins run in Anvil's sandboxes; this side only asks the user, shows what
-- plugins return and say, keeps the server's copy of the buffers current and applies a
-- plugin's edit only to the exact buffer version it was computed from.
local api = vim.api
local uv = vim.loop
local rpc = require('anvil.rpc')
local buffers = require('anvil.buffers')
local ui = require('anvil.ui')

local M = {}

M.config = {
  cmd = {'anvil'},        -- the anvil binary (argv list or string)
  workspace = nil,        -- nil: the nearest parent of the cwd with Anvil.toml, anvil.lock or .git
  plugin_dirs = {},       -- --plugin-dir: load (and enable) these plugins
  plugin_path = {},       -- --plugin-path: installed plugins, enabled by the workspace's Anvil.toml
  args = {},              -- more `anvil serve` arguments (e.g. {'--timeout', '30'})
  start_timeout_ms = 20000,
  -- Plugins approved without the interactive choice (headless Neovim, CI): a list of plugin
  -- ids, or true for every plugin. The consent text is still shown (vim.notify, :AnvilLog).
  auto_approve = {},
  format = nil,           -- :AnvilFormat and formatexpr: '[PLUGIN:]COMMAND' run on the buffer
  format_timeout_ms = 10000,  -- how long formatexpr (synchronous) waits for the formatter
}

local session = nil  -- the running session, or nil
local log_lines = {}

local function log(line)
  log_lines[#log_lines + 1] = line
  if #log_lines > 2000 then table.remove(log_lines, 1) end
end

function M.setup(opts)
  M.config = vim.tbl_deep_extend('force', M.config, opts or {})
end

-- The command that starts anvil serve, or nil and what to do when the binary is not there.
function M.command()
  local cmd = type(M.config.cmd) == 'string' and {M.config.cmd} or vim.deepcopy(M.config.cmd)
  if type(cmd) ~= 'table' or type(cmd[1]) ~= 'string' or cmd[1] == '' then
    return nil, "cmd is not set (fix: require('anvil').setup({cmd = {'/path/to/anvil'}}))"
  end
  if vim.fn.executable(cmd[1]) ~= 1 then
    local where = cmd[1]:find('/', 1, true) and 'is not an executable file'
        or 'is not on PATH'
    return nil, string.format("'%s' %s (fix: install anvil and put it on PATH, or tell the "
        .. "client where it is: require('anvil').setup({cmd = {'/path/to/anvil'}}))",
        cmd[1], where)
  end
  return cmd
end

local function find_workspace()
  if M.config.workspace then return M.config.workspace end
  local dir = uv.cwd()
  while dir do
    for _, marker in ipairs({'Anvil.toml', 'anvil.lock', '.git'}) do
      if uv.fs_stat(dir .. '/' .. marker) then return dir end
    end
    local parent = vim.fn.fnamemodify(dir, ':h')
    if parent == dir then break end
    dir = parent
  end
  return uv.cwd()
end

local function error_text(err)
  if type(err) ~= 'table' then return tostring(err) end
  return ui.sanitize(err.message or vim.inspect(err))
end

-- A plugin error's location and stack (error.data.trace, docs/protocol.md): the stack goes to
-- :AnvilLog, and the location becomes the quickfix list's one entry (not opened: :copen). The
-- trace is the plugin's text: every string is sanitized, and a file that is not a plain path
-- inside the plugin directory gets no quickfix entry.
local function show_trace(plugin, command, trace)
  if type(trace) ~= 'table' then return end
  local where = ''
  if type(trace.file) == 'string' and trace.file ~= '' then
    where = ui.sanitize(trace.file) .. (type(trace.line) == 'number' and (':' .. trace.line) or '')
        .. (type(trace.column) == 'number' and (':' .. trace.column) or '')
  end
  log(string.format('[%s] %s failed%s', plugin.id, command, where ~= '' and (' at ' .. where) or ''))
  if type(trace.source) == 'string' and type(trace.line) == 'number' then
    log(string.format('  %d | %s', trace.line, ui.sanitize(trace.source)))
  end
  if type(trace.note) == 'string' then log('  (' .. ui.sanitize(trace.note) .. ')') end
  for i, frame in ipairs(type(trace.stack) == 'table' and trace.stack or {}) do
    if i > 16 then break end
    log('  ' .. ui.sanitize(tostring(frame)))
  end
  local file = trace.file
  if type(file) == 'string' and file ~= '' and file:sub(1, 1) ~= '/' and not file:find('%.%.')
      and type(plugin.dir) == 'string' and type(trace.line) == 'number' then
    vim.fn.setqflist({}, ' ', {
      title = string.format('[%s] %s failed', plugin.id, command),
      items = {{filename = plugin.dir .. '/' .. file, lnum = trace.line,
                col = type(trace.column) == 'number' and trace.column or 1,
                text = ui.sanitize(tostring(trace.note or 'error'))}},
    })
  end
  return where
end

-- ---- server → client -----------------------------------------------------------------------

local function on_progress(s, params)
  local run = s.runs_by_token[params.token]
  local value = type(params.value) == 'table' and params.value or {}
  if run then
    run.progress[#run.progress + 1] = value
    if value.kind == 'begin' then run.title = ui.sanitize(value.title) end
  end
  local title = run and run.title or tostring(params.token)
  M.last_progress = {token = params.token, title = title, kind = value.kind,
                     message = ui.sanitize(value.message)}
  api.nvim_echo({{title .. ': ' .. ui.sanitize(value.message or value.kind or ''), 'Comment'}},
                false, {})
end

local function handlers(s)
  return {
    on_request = function(method, params, reply)
      if method == 'anvil/consent' then
        local id = type(params.plugin) == 'table' and params.plugin.id
        if M.approves_without_asking(s, id) then
          -- Asked for by :AnvilApprove! or auto_approve: the user still sees what was granted.
          s.preapproved[id] = nil
          local text = ui.consent_text(params)
          for _, l in ipairs(text) do log(l) end
          ui.notify(table.concat(text, '\n') .. '\n(approved without asking: '
                    .. (M.config.auto_approve == true and 'auto_approve = true'
                        or 'auto_approve or :AnvilApprove!') .. ')')
          reply({decision = 'approve'})
          return
        end
        ui.consent(params, function(decision) reply({decision = decision}) end)
      elseif method == 'anvil/approve' then
        -- An agent's command (anvil/exec) asks to run or to widen its sandbox: always the
        -- interactive choice (auto_approve is for plugins, never for commands).
        log('approval asked: ' .. ui.sanitize(params.title) .. ': '
            .. ui.sanitize(table.concat(type(params.argv) == 'table' and params.argv or {}, ' ')))
        ui.approve(params, function(answer)
          log('approval answered: ' .. answer)
          reply({answer = answer})
        end)
      elseif method == 'workspace/applyEdit' then
        local answer = s.docs:apply_workspace_edit(params, s.encoding)
        if answer.applied then
          -- The command's real output is the edit: it need not open a result window.
          for run in pairs(s.runs) do
            if run.title == params.label then run.edited = true end
          end
        else
          ui.notify(ui.sanitize(params.label or '[anvil] edit') .. ': edit not applied: '
                    .. ui.sanitize(answer.failureReason), vim.log.levels.WARN)
        end
        reply(answer)
      else
        reply(nil, {code = -32601, message = 'method not found: ' .. method})
      end
    end,
    on_notification = function(method, params)
      if method == 'window/showMessage' then
        ui.show_message(params)
      elseif method == 'window/logMessage' then
        log(ui.sanitize(params.message))
        -- Anvil's own warnings (dropped notifications, restarts) are worth a look.
        if (params.type == 1 or params.type == 2) then
          ui.notify(ui.sanitize(params.message), params.type == 1 and vim.log.levels.ERROR
                    or vim.log.levels.WARN)
        end
      elseif method == '$/progress' then
        on_progress(s, params)
      end
    end,
    on_stderr = function(line)
      s.last_stderr = line
      log(line)
    end,
    on_exit = function(code, signal)
      log(string.format('anvil serve exited (code %s, signal %s)', code, signal))
      if session == s then
        session = nil
        if not s.stopping then
          ui.notify(string.format('anvil serve exited unexpectedly (code %s, signal %s); '
                                  .. ':AnvilLog shows why', code, signal), vim.log.levels.ERROR)
        end
      end
    end,
  }
end

-- ---- session -------------------------------------------------------------------------------

function M.session() return session end

function M.start()
  if session then return session end
  local cfg = M.config
  local ws = uv.fs_realpath(find_workspace())
  if not ws then return nil, 'the workspace directory does not exist' end
  local cmd, why = M.command()
  if not cmd then return nil, 'cannot start anvil serve: ' .. why end
  vim.list_extend(cmd, {'serve', '--workspace', ws})
  for _, d in ipairs(cfg.plugin_dirs) do vim.list_extend(cmd, {'--plugin-dir', d}) end
  for _, d in ipairs(cfg.plugin_path) do vim.list_extend(cmd, {'--plugin-path', d}) end
  vim.list_extend(cmd, cfg.args)

  local s = {workspace = ws, runs_by_token = {}, runs = {}, history = {}, next_run = 1,
             plugins = {}, preapproved = {}}
  local client, err = rpc.start({cmd = cmd, cwd = ws, handlers = handlers(s)})
  if not client then return nil, err end
  s.client = client
  s.docs = buffers.new(ws, function(method, params) client:notify(method, params) end)
  local result, ierr = client:request_sync('initialize', {
    processId = vim.fn.getpid(),
    clientInfo = {name = 'anvil.nvim', version = '0.1.0'},
    rootUri = vim.uri_from_fname(ws),
    capabilities = {
      general = {positionEncodings = {'utf-8', 'utf-16'}},
      workspace = {applyEdit = true, workspaceEdit = {documentChanges = true}},
      window = {workDoneProgress = true},
    },
  }, cfg.start_timeout_ms)
  if not result then
    s.stopping = true
    client:kill()
    -- What anvil serve said on stderr usually names the problem (a bad flag, a missing dir).
    return nil, 'anvil serve did not initialize: ' .. error_text(ierr)
        .. (s.last_stderr and (' (' .. ui.sanitize(s.last_stderr) .. '; more in :AnvilLog)') or '')
  end
  s.encoding = result.capabilities and result.capabilities.positionEncoding or 'utf-16'
  s.info = result.anvil
  client:notify('initialized', vim.empty_dict())
  session = s
  for _, bufnr in ipairs(api.nvim_list_bufs()) do s.docs:open(bufnr) end
  return s
end

local function ensure()
  local s, err = M.start()
  if not s then ui.notify('Anvil: ' .. err, vim.log.levels.ERROR) end
  return s
end

-- Stops the session: shutdown, exit, and wait until the process (and with it every plugin
-- host and the gateway, which anvil serve stops and reaps first) is gone.
function M.stop()
  local s = session
  if not s then return true end
  s.stopping = true
  session = nil
  s.docs:close_all()
  return s.client:stop(5000)
end

-- ---- requests ------------------------------------------------------------------------------

function M.list_plugins_sync()
  local s = ensure()
  if not s then return nil end
  local result, err = s.client:request_sync('anvil/listPlugins', nil, 10000)
  if not result then
    ui.notify('Anvil: listing plugins failed: ' .. error_text(err), vim.log.levels.ERROR)
    return nil
  end
  s.plugins = result.plugins or {}
  return result
end

function M.status_sync()
  local s = ensure()
  if not s then return nil end
  return s.client:request_sync('anvil/status', nil, 10000)
end

function M.approves_without_asking(s, id)
  if type(id) ~= 'string' then return false end
  if s.preapproved[id] then return true end
  local auto = M.config.auto_approve
  return auto == true or (type(auto) == 'table' and vim.tbl_contains(auto, id))
end

local function short_names(p)
  local names = {p.id, (p.id:match('[^.]+$'))}
  if type(p.dir) == 'string' then names[#names + 1] = vim.fn.fnamemodify(p.dir, ':t') end
  return names
end

-- The plugin `name` means: its id, else the one plugin whose id's last part or directory name
-- it is (what :AnvilRun PLUGIN:COMMAND accepts). Returns the entry, or nil and why.
function M.resolve_plugin(name, plugins)
  for _, p in ipairs(plugins) do
    if p.id == name then return p end
  end
  local found = {}
  for _, p in ipairs(plugins) do
    if vim.tbl_contains(short_names(p), name) then found[#found + 1] = p end
  end
  if #found == 1 then return found[1] end
  if #found > 1 then
    return nil, 'several plugins are called ' .. name .. ': use one of '
        .. table.concat(vim.tbl_map(function(p) return p.id end, found), ', ')
  end
  return nil, 'no plugin ' .. name
end

-- `name` as the user typed it, resolved against the server's list; nil after telling the user.
local function plugin_id(name)
  local list = M.list_plugins_sync()
  if not list then return nil end
  local p, why = M.resolve_plugin(name, list.plugins or {})
  if not p then
    ui.notify('Anvil: ' .. ui.sanitize(why), vim.log.levels.ERROR)
    return nil
  end
  return p.id
end

-- Asks the server to ask the user (anvil/consent comes back to us); `cb(granted, state)`.
-- `plugin`: an id or a short name. opts.without_asking (:AnvilApprove!): approve this request
-- without the interactive choice; the consent text is still shown.
function M.approve(plugin, cb, opts)
  local s = ensure()
  if not s then return end
  local id = plugin_id(plugin)
  if not id then
    if cb then cb(false, nil) end
    return
  end
  plugin = id
  if opts and opts.without_asking then s.preapproved[id] = true end
  s.client:request('anvil/requestConsent', {plugin = plugin}, function(err, result)
    s.preapproved[id] = nil
    if err then
      ui.notify('Anvil: consent for ' .. plugin .. ' failed: ' .. error_text(err),
                vim.log.levels.ERROR)
      if cb then cb(false, nil) end
      return
    end
    local granted = result and result.granted == true
    ui.notify(string.format('Anvil: %s %s (%s)', ui.sanitize(plugin),
                            granted and 'approved' or 'not approved',
                            ui.sanitize(result and result.state or '?')))
    if cb then cb(granted, result and result.state) end
  end)
end

-- "plugin:command" (plugin: its id, the id's last part or its directory name) or "command"
-- (a command exactly one ready plugin has). Returns plugin entry, command or nil, why.
function M.resolve(spec, plugins)
  local pname, command = spec:match('^([^:]+):(.+)$')
  if pname then
    local p, why = M.resolve_plugin(pname, plugins)
    if p then return p, command end
    return nil, why
  end
  local found = {}
  for _, p in ipairs(plugins) do
    if type(p.commands) == 'table' and vim.tbl_contains(p.commands, spec) then
      found[#found + 1] = p
    end
  end
  if #found == 1 then return found[1], spec end
  if #found > 1 then
    local ids = vim.tbl_map(function(p) return p.id .. ':' .. spec end, found)
    return nil, 'several plugins have command ' .. spec .. ': use one of '
        .. table.concat(ids, ', ')
  end
  local waiting = {}
  for _, p in ipairs(plugins) do
    if p.state == 'needs_consent' then waiting[#waiting + 1] = p.id end
  end
  local hint = #waiting > 0 and (' (not approved yet: ' .. table.concat(waiting, ', ')
                                 .. '; use :AnvilApprove or PLUGIN:' .. spec .. ')') or ''
  return nil, 'no ready plugin has command ' .. spec .. hint
end

-- "%" stands for the current buffer (its URI as the server knows it); a quoted one
-- (`literal[i]`) is a percent sign.
local function expand_args(s, args, literal)
  local out = {}
  for i, a in ipairs(args) do
    if a == '%' and not (literal and literal[i]) then
      local doc = s.docs:open(api.nvim_get_current_buf())
      out[#out + 1] = doc and doc.uri or vim.fn.expand('%:p')
    else
      out[#out + 1] = a
    end
  end
  return out
end

-- Runs `spec` with `args`; returns the run: {plugin, command, token, progress, done, error,
-- value, shown}. `opts.on_done(run)` runs when it is answered. A plugin that needs consent is
-- asked for first.
function M.run(spec, args, opts)
  opts = opts or {}
  local s = ensure()
  if not s then return nil end
  local list = M.list_plugins_sync()
  if not list then return nil end
  local plugin, command = M.resolve(spec, list.plugins or {})
  if not plugin then
    ui.notify('Anvil: ' .. command, vim.log.levels.ERROR)
    return nil
  end
  local run = {plugin = plugin.id, command = command, progress = {}, done = false,
               args = expand_args(s, args or {}, opts.literal)}
  run.token = 'anvil.nvim-' .. s.next_run
  s.next_run = s.next_run + 1
  s.runs_by_token[run.token] = run
  -- The last runs, for a statusline or a test to look at (bounded: sessions last all day).
  table.insert(s.history, run)
  if #s.history > 50 then table.remove(s.history, 1) end
  local function finish(err, result)
    run.done, run.error = true, err
    run.value = result and result.value
    s.runs[run] = nil
    s.runs_by_token[run.token] = nil  -- the progress "end" came before the answer
    if err then
      local code = type(err.data) == 'table' and err.data.code or tostring(err.code)
      run.error_code = code
      if err.code == -32800 then
        ui.notify(string.format('[%s] %s cancelled', plugin.id, command))
      else
        local trace = type(err.data) == 'table' and err.data.trace or nil
        local where = show_trace(plugin, command, trace)
        ui.notify(string.format('[%s] %s failed: %s%s', plugin.id, command, error_text(err),
                                where and string.format(' (at %s; stack in :AnvilLog)', where)
                                    or ''),
                  vim.log.levels.ERROR)
      end
    elseif run.edited or opts.quiet then
      -- The edit is the output (or the caller, a formatter, wants no window): one line in the
      -- message area; no split, and the cursor stays where it was.
      local said = run.value == nil and 'done'
          or (type(run.value) == 'string' and run.value or vim.json.encode(run.value))
      ui.notify(string.format('[%s] %s: %s%s', plugin.id, command,
                              run.edited and 'edited the buffer: ' or '',
                              ui.sanitize(said):sub(1, 200)))
      run.shown = 'notify'
    else
      run.shown = ui.show_result(plugin.id, command, run.value, s.workspace)
    end
    if opts.on_done then opts.on_done(run) end
  end
  local function send()
    if session ~= s then return finish({message = 'anvil serve is not running'}, nil) end
    s.docs:flush_all()  -- the plugin sees what the user sees
    s.runs[run] = true
    run.id = s.client:request('anvil/runCommand', {plugin = plugin.id, command = command,
                                                   arguments = run.args,
                                                   workDoneToken = run.token}, finish)
  end
  if plugin.state == 'needs_consent' then
    M.approve(plugin.id, function(granted)
      if granted then return send() end
      finish({message = 'consent_required: not approved', data = {code = 'consent_required'}})
    end)
  else
    send()
  end
  return run
end

-- The lines of an anvil/exec answer: the command, its exit status and the rules' decision,
-- a refusal or the widening on offer, then its output (capped by the server).
function M.exec_lines(run)
  local lines = {'$ ' .. ui.sanitize(run.script)}
  if run.error then
    lines[#lines + 1] = 'failed: ' .. error_text(run.error)
    return lines
  end
  local r = run.result or {}
  lines[#lines + 1] = string.format('exit %s (rules: %s, mode %s)', tostring(r.exit),
                                    ui.sanitize(r.decision), ui.sanitize(r.mode))
  if r.refused then
    lines[#lines + 1] = 'refused: ' .. ui.sanitize(r.refusal)
    if r.how_to_allow then lines[#lines + 1] = 'to allow it: ' .. ui.sanitize(r.how_to_allow) end
  end
  local esc = type(r.escalation) == 'table' and r.escalation or nil
  if esc and type(esc.widening) == 'table' then
    lines[#lines + 1] = string.format('widening %s: %s',
        table.concat(vim.tbl_map(ui.sanitize, esc.widening.flags or {}), ' '),
        ui.sanitize(esc.state))
  end
  for _, stream in ipairs({'stdout', 'stderr'}) do
    local text = type(r[stream]) == 'string' and r[stream] or ''
    if text ~= '' then
      lines[#lines + 1] = '--- ' .. stream .. (r[stream .. '_truncated'] and ' (truncated)' or '')
          .. ' ---'
      for line in (text:gsub('\n$', '') .. '\n'):gmatch('(.-)\n') do
        lines[#lines + 1] = (line:gsub('[%z\1-\8\11-\31\127]', ''))
      end
    end
  end
  return lines
end

-- Runs a shell command line through anvil/exec (the command rules, the approval mode of the
-- session, the sandbox; any question comes back as anvil/approve). Returns the run: {script,
-- token, done, error, result, shown}; `opts.on_done(run)` when it is answered.
function M.exec(script, opts)
  opts = opts or {}
  local s = ensure()
  if not s then return nil end
  local run = {script = script, progress = {}, done = false, exec = true}
  run.token = 'anvil.nvim-' .. s.next_run
  s.next_run = s.next_run + 1
  s.runs_by_token[run.token] = run
  s.runs[run] = true
  M.last_exec = run
  run.id = s.client:request('anvil/exec', {script = script, workDoneToken = run.token},
    function(err, result)
      run.done, run.error, run.result = true, err, result
      s.runs[run] = nil
      s.runs_by_token[run.token] = nil
      if err and err.code == -32800 then
        ui.notify('Anvil: cancelled: ' .. ui.sanitize(script))
        run.shown = 'notify'
      else
        ui.scratch('anvil://exec', M.exec_lines(run))
        run.shown = 'anvil://exec'
      end
      if opts.on_done then opts.on_done(run) end
    end)
  return run
end

-- Cancels every command in flight ($/cancelRequest).
function M.cancel()
  local s = session
  if not s then return end
  for run in pairs(s.runs) do
    if run.id then s.client:notify('$/cancelRequest', {id = run.id}) end
  end
end

function M.reload(plugin, cb)
  local s = ensure()
  if not s then return end
  local id = plugin_id(plugin)
  if not id then
    if cb then cb({message = 'no such plugin'}, nil) end
    return
  end
  plugin = id
  s.client:request('anvil/reload', {plugin = plugin}, function(err, result)
    if err then
      ui.notify('Anvil: reloading ' .. plugin .. ' failed: ' .. error_text(err),
                vim.log.levels.ERROR)
    else
      ui.notify(string.format('Anvil: %s reloaded: %s', ui.sanitize(plugin),
                              ui.sanitize(result and result.state or '?')))
      if result and result.state == 'needs_consent' then
        ui.notify('Anvil: ' .. ui.sanitize(plugin) .. ' now asks for more; :AnvilApprove '
                  .. ui.sanitize(plugin), vim.log.levels.WARN)
      end
    end
    if cb then cb(err, result) end
  end)
end

-- ---- formatting ----------------------------------------------------------------------------

-- Runs the formatter `spec` ('[PLUGIN:]COMMAND', default config.format) on the current buffer.
-- Its edit lands in the buffer through workspace/applyEdit; no window opens and focus stays.
-- Returns the run, or nil after telling the user why not.
function M.format(spec, opts)
  spec = (spec and spec ~= '') and spec or M.config.format
  if not spec then
    ui.notify("Anvil: no formatter: :AnvilFormat [PLUGIN:]COMMAND, or "
              .. "require('anvil').setup({format = 'PLUGIN:COMMAND'})", vim.log.levels.ERROR)
    return nil
  end
  return M.run(spec, {'%'}, vim.tbl_extend('force', opts or {}, {quiet = true}))
end

-- For 'formatexpr' (`setlocal formatexpr=v:lua.require'anvil'.formatexpr()`): formats the whole
-- buffer with config.format and waits for it (gq is synchronous). Returns 1, Vim's own
-- formatting, when no formatter is set or while typing (automatic wrapping).
function M.formatexpr()
  if not M.config.format or vim.v.char ~= '' then return 1 end
  local run = M.format(M.config.format)
  if not run then return 0 end
  if not vim.wait(M.config.format_timeout_ms, function() return run.done end, 10) then
    ui.notify('Anvil: the formatter did not answer in time; :AnvilCancel stops it',
              vim.log.levels.WARN)
  end
  return 0
end

-- ---- :AnvilPlugins -------------------------------------------------------------------------

local function perm_summary(req)
  if type(req) ~= 'table' then return 'nothing' end
  local parts = {}
  for _, key in ipairs({'fs.read', 'fs.write', 'net.hosts', 'exec'}) do
    if type(req[key]) == 'table' and #req[key] > 0 then
      parts[#parts + 1] = key .. ' ' .. table.concat(req[key], ' ')
    end
  end
  if req['net.post'] == true then parts[#parts + 1] = 'net.post' end
  return #parts > 0 and table.concat(parts, '; ') or 'nothing'
end

function M.plugins_lines(list)
  local lines, at = {}, {}
  lines[1] = 'Anvil plugins in ' .. (session and session.workspace or '?')
      .. '   (a: approve, r: reload, <CR>: refresh, q: close)'
  if list.workspaceConfigError then
    lines[#lines + 1] = 'Anvil.toml refused: ' .. ui.sanitize(list.workspaceConfigError)
  end
  for _, p in ipairs(list.plugins or {}) do
    lines[#lines + 1] = ''
    lines[#lines + 1] = string.format('%s %s (%s)  state: %s  grant: %s', ui.sanitize(p.id),
      ui.sanitize(p.version or '?'), ui.sanitize(p.runtime or '?'), ui.sanitize(p.state),
      ui.sanitize(type(p.grant) == 'table' and p.grant.state or '?'))
    at[#lines] = p.id
    if p.detail then lines[#lines + 1] = '  ' .. ui.sanitize(p.detail); at[#lines] = p.id end
    lines[#lines + 1] = '  commands: ' .. (type(p.commands) == 'table'
      and table.concat(vim.tbl_map(ui.sanitize, p.commands), ', ') or '(not loaded)')
    at[#lines] = p.id
    lines[#lines + 1] = '  requests: '
        .. perm_summary(type(p.grant) == 'table' and p.grant.requested)
    at[#lines] = p.id
    lines[#lines + 1] = '  dir: ' .. ui.sanitize(p.dir or '?')
    at[#lines] = p.id
  end
  for _, id in ipairs(list.missing or {}) do
    lines[#lines + 1] = ''
    lines[#lines + 1] = ui.sanitize(id) .. '  enabled by Anvil.toml, not installed'
  end
  return lines, at
end

function M.show_plugins()
  local list = M.list_plugins_sync()
  if not list then return nil end
  local lines, at = M.plugins_lines(list)
  local bufnr = ui.scratch('anvil://plugins', lines, 'anvilplugins')
  local function plugin_here() return at[api.nvim_win_get_cursor(0)[1]] end
  local function map(lhs, fn)
    vim.keymap.set('n', lhs, fn, {buffer = bufnr, nowait = true, silent = true})
  end
  map('a', function()
    local id = plugin_here()
    if id then M.approve(id, function() M.show_plugins() end) end
  end)
  map('r', function()
    local id = plugin_here()
    if id then M.reload(id, function() M.show_plugins() end) end
  end)
  map('<CR>', M.show_plugins)
  map('q', '<cmd>close<CR>')
  return bufnr, list
end

function M.show_log()
  ui.scratch('anvil://log', #log_lines > 0 and vim.deepcopy(log_lines) or {'(empty)'})
end

function M.log_lines() return log_lines end

-- Completion of :AnvilRun from the last plugin list (it never starts a server).
function M.complete_commands(lead)
  local out = {}
  for _, p in ipairs(session and session.plugins or {}) do
    for _, c in ipairs(type(p.commands) == 'table' and p.commands or {}) do
      for _, cand in ipairs({c, p.id .. ':' .. c}) do
        if cand:sub(1, #lead) == lead then out[#out + 1] = cand end
      end
    end
  end
  table.sort(out)
  return vim.fn.uniq(out)
end

function M.complete_plugins(lead)
  local out = {}
  for _, p in ipairs(session and session.plugins or {}) do
    for _, name in ipairs(short_names(p)) do
      if name:sub(1, #lead) == lead then out[#out + 1] = name end
    end
  end
  table.sort(out)
  return vim.fn.uniq(out)
end

-- ---- buffer events (wired by plugin/anvil.lua) ---------------------------------------------

function M.on_buf_open(bufnr)
  if session then session.docs:open(bufnr) end
end

function M.on_buf_close(bufnr)
  if session then session.docs:close(bufnr) end
end

return M
