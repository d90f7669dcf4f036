-- JSON-RPC 2.0 with LSP framing (Content-Length) over the stdio of one `anvil serve` process.
-- Everything the server sends is dispatched on the main loop (vim.schedule), in order, so
-- handlers may call any Neovim API. Requests the server sends us (anvil/consent,
-- workspace/applyEdit) are answered exactly once, also when the handler fails.
local uv = vim.loop

local M = {}

local Client = {}
Client.__index = Client

-- vim.json turns JSON null into vim.NIL; the rest of the client only wants nil.
local function denull(v)
  if v == vim.NIL then return nil end
  if type(v) == 'table' then
    for k, x in pairs(v) do v[k] = denull(x) end
  end
  return v
end
M.denull = denull

local function frame(message)
  local body = vim.json.encode(message)
  return 'Content-Length: ' .. #body .. '\r\n\r\n' .. body
end

-- Splits `buffer` into complete messages; returns the messages and what is left over.
-- A header block without a usable Content-Length cannot be resynchronised safely, so it is
-- reported as an error and the connection is given up (anvil serve never sends one).
function M.parse_frames(buffer)
  local out = {}
  while true do
    local header_end = buffer:find('\r\n\r\n', 1, true)
    if not header_end then break end
    local header = buffer:sub(1, header_end - 1)
    local length
    for line in header:gmatch('[^\r\n]+') do
      local name, value = line:match('^([^:]+):%s*(.-)%s*$')
      if name and name:lower() == 'content-length' then length = tonumber(value) end
    end
    if not length then return out, buffer, 'header without Content-Length' end
    local body_start = header_end + 4
    if #buffer < body_start + length - 1 then break end
    local body = buffer:sub(body_start, body_start + length - 1)
    buffer = buffer:sub(body_start + length)
    local ok, decoded = pcall(vim.json.decode, body)
    if not ok then return out, buffer, 'invalid JSON from the server: ' .. tostring(decoded) end
    out[#out + 1] = denull(decoded)
  end
  return out, buffer, nil
end

-- opts: cmd (argv list), cwd, handlers = {on_request(method, params, reply),
-- on_notification(method, params), on_stderr(line), on_exit(code, signal)}
function M.start(opts)
  local self = setmetatable({
    handlers = opts.handlers,
    pending = {},  -- id -> callback(err, result)
    next_id = 1,
    closing = false,
    exited = false,
  }, Client)
  local stdin, stdout, stderr = uv.new_pipe(false), uv.new_pipe(false), uv.new_pipe(false)
  self.stdin, self.stdout, self.stderr = stdin, stdout, stderr
  local argv = opts.cmd
  -- The end is reported once the process is reaped and both its outputs reached EOF, so the
  -- last answer and the last stderr line (often the reason it exited) come first. A process it
  -- left behind may hold a pipe open: then one second after the exit is enough waiting.
  local eof, finished = {stdout = false, stderr = false}, false
  local function finish()
    if finished then return end
    finished = true
    vim.schedule(function()
      -- Whoever still waits for an answer gets one: the server is gone.
      local pending = self.pending
      self.pending = {}
      for _, cb in pairs(pending) do
        cb({code = -32099, message = 'anvil serve exited', data = {code = 'exited'}}, nil)
      end
      if self.handlers.on_exit then self.handlers.on_exit(self.exit_code, self.exit_signal) end
    end)
  end
  local function maybe_finish()
    if self.exited and eof.stdout and eof.stderr then finish() end
  end
  local handle, pid_or_err = uv.spawn(argv[1], {
    args = vim.list_slice(argv, 2),
    cwd = opts.cwd,
    stdio = {stdin, stdout, stderr},
  }, function(code, signal)
    self.exited = true
    self.exit_code, self.exit_signal = code, signal
    -- stdout and stderr are closed at their EOF, so nothing the server wrote last is lost.
    if not stdin:is_closing() then stdin:close() end
    if self.handle and not self.handle:is_closing() then self.handle:close() end
    maybe_finish()
    if not finished then
      local timer = uv.new_timer()
      timer:start(1000, 0, function()
        timer:close()
        finish()
      end)
    end
  end)
  if not handle then
    for _, p in ipairs({stdin, stdout, stderr}) do p:close() end
    return nil, 'cannot start ' .. argv[1] .. ': ' .. tostring(pid_or_err)
  end
  self.handle, self.pid = handle, pid_or_err

  local buffer = ''
  local function close_at_eof(name, pipe, err, data)
    if err or not data then
      if not pipe:is_closing() then pipe:close() end
      eof[name] = true
      maybe_finish()
      return true
    end
    return false
  end
  stdout:read_start(function(err, data)
    if close_at_eof('stdout', stdout, err, data) then return end
    buffer = buffer .. data
    local messages, rest, perr = M.parse_frames(buffer)
    buffer = rest
    for _, m in ipairs(messages) do
      vim.schedule(function() self:_dispatch(m) end)
    end
    if perr then
      buffer = ''
      vim.schedule(function()
        if self.handlers.on_stderr then self.handlers.on_stderr('Anvil client: ' .. perr) end
        self:kill()
      end)
    end
  end)
  local errbuf = ''
  stderr:read_start(function(err, data)
    local at_eof = err or not data
    errbuf = errbuf .. (data or '')
    if at_eof and errbuf ~= '' then errbuf = errbuf .. '\n' end  -- the unfinished last line
    local lines = {}
    while true do
      local nl = errbuf:find('\n', 1, true)
      if not nl then break end
      lines[#lines + 1] = errbuf:sub(1, nl - 1)
      errbuf = errbuf:sub(nl + 1)
    end
    if #lines > 0 and self.handlers.on_stderr then
      vim.schedule(function()
        for _, l in ipairs(lines) do self.handlers.on_stderr(l) end
      end)
    end
    if at_eof then close_at_eof('stderr', stderr, err, data) end
  end)
  return self
end

function Client:_write(message)
  if self.exited or self.stdin:is_closing() then return false end
  self.stdin:write(frame(message))
  return true
end

function Client:_dispatch(m)
  if m.method and m.id ~= nil then
    local replied = false
    local function reply(result, err)
      if replied then return end
      replied = true
      if err then
        self:_write({jsonrpc = '2.0', id = m.id, error = err})
      else
        self:_write({jsonrpc = '2.0', id = m.id, result = result == nil and vim.NIL or result})
      end
    end
    local ok, e = pcall(self.handlers.on_request, m.method, m.params or {}, reply)
    if not ok then reply(nil, {code = -32603, message = 'client error: ' .. tostring(e)}) end
  elseif m.method then
    local ok, e = pcall(self.handlers.on_notification, m.method, m.params or {})
    if not ok and self.handlers.on_stderr then
      self.handlers.on_stderr('Anvil client: handling ' .. m.method .. ' failed: ' .. tostring(e))
    end
  elseif m.id ~= nil then
    local cb = self.pending[m.id]
    self.pending[m.id] = nil
    if cb then cb(m.error, m.result) end
  end
end

-- Sends a request; `callback(err, result)` runs once on the main loop. Returns the id.
function Client:request(method, params, callback)
  local id = self.next_id
  self.next_id = id + 1
  self.pending[id] = callback or function() end
  if not self:_write({jsonrpc = '2.0', id = id, method = method,
                      params = params or vim.empty_dict()}) then
    self.pending[id] = nil
    vim.schedule(function()
      (callback or function() end)({code = -32099, message = 'anvil serve is not running',
                                   data = {code = 'exited'}}, nil)
    end)
  end
  return id
end

-- The same, waiting (and processing events) up to `timeout_ms`.
function Client:request_sync(method, params, timeout_ms)
  local done, err, result = false, nil, nil
  self:request(method, params, function(e, r) done, err, result = true, e, r end)
  if not vim.wait(timeout_ms or 10000, function() return done end, 10) then
    return nil, {code = -32098, message = method .. ': no answer from anvil serve in time'}
  end
  return result, err
end

function Client:notify(method, params)
  return self:_write({jsonrpc = '2.0', method = method, params = params or vim.empty_dict()})
end

function Client:is_running() return not self.exited end

-- shutdown + exit, then wait for the process; SIGTERM and finally SIGKILL if it does not go.
-- anvil serve stops and reaps its hosts and the gateway before it exits, so once this returns
-- nothing of the session is left.
function Client:stop(timeout_ms)
  timeout_ms = timeout_ms or 5000
  if self.exited then return true end
  if not self.closing then
    self.closing = true
    self:request_sync('shutdown', nil, timeout_ms)
    self:notify('exit')
  end
  if vim.wait(timeout_ms, function() return self.exited end, 10) then return true end
  self:kill()
  return vim.wait(timeout_ms, function() return self.exited end, 10)
end

function Client:kill()
  if self.exited or not self.handle then return end
  self.handle:kill('sigterm')
  if not vim.wait(2000, function() return self.exited end, 10) then
    self.handle:kill('sigkill')
    vim.wait(2000, function() return self.exited end, 10)
  end
end

return M
