-- What the client puts in front of the user: notifications, the consent prompt, results.
local api = vim.api

local M = {}

-- anvil serve already strips escape sequences and controls from what plugins say; this is the
-- belt to its braces, so a terminal or an external notifier never gets a raw control byte even
-- from a server bug: C0 controls, DEL and C1 controls (UTF-8 \194\128-\194\159) go away.
function M.sanitize(text)
  text = tostring(text or '')
  text = text:gsub('[\r\n\t]', ' ')
  text = text:gsub('[%z\1-\31\127]', '')
  text = text:gsub('\194[\128-\159]', '')
  return text
end

local levels = {[1] = vim.log.levels.ERROR, [2] = vim.log.levels.WARN,
                [3] = vim.log.levels.INFO, [4] = vim.log.levels.DEBUG}

-- window/showMessage. A plugin's message arrives as "[plugin.id] text"; the prefix is kept
-- first so that nothing a plugin says can pass for Anvil's own words.
function M.show_message(params)
  local msg = M.sanitize(params.message)
  local plugin = type(params.anvil) == 'table' and params.anvil.plugin or nil
  local opts = {title = 'Anvil'}
  if type(plugin) == 'string' then
    local prefix = '[' .. M.sanitize(plugin) .. ']'
    if msg:sub(1, #prefix) ~= prefix then msg = prefix .. ' ' .. msg end
    opts.title = 'Anvil: ' .. M.sanitize(plugin)
  end
  vim.notify(msg, levels[params.type] or vim.log.levels.INFO, opts)
end

function M.notify(msg, level) vim.notify(msg, level or vim.log.levels.INFO, {title = 'Anvil'}) end

-- A scratch buffer (reused by name) shown in a split; returns its number.
function M.scratch(name, lines, filetype)
  local bufnr = vim.fn.bufnr(name)
  if bufnr == -1 or not api.nvim_buf_is_valid(bufnr) then
    bufnr = api.nvim_create_buf(false, true)
    api.nvim_buf_set_name(bufnr, name)
    vim.bo[bufnr].buftype = 'nofile'
    vim.bo[bufnr].bufhidden = 'hide'
    vim.bo[bufnr].swapfile = false
  end
  vim.bo[bufnr].modifiable = true
  api.nvim_buf_set_lines(bufnr, 0, -1, false, lines)
  vim.bo[bufnr].modifiable = false
  if filetype then vim.bo[bufnr].filetype = filetype end
  local win = vim.fn.bufwinid(bufnr)
  if win == -1 then
    vim.cmd('botright split')
    api.nvim_win_set_buf(0, bufnr)
  else
    api.nvim_set_current_win(win)
  end
  return bufnr
end

-- The consent prompt: a floating window with exactly what anvil serve sent (its plain-words
-- text of the request; plugin-supplied strings in it are sanitized by the server), then a
-- choice through vim.ui.select. `done` gets "approve" or "deny"; no choice is a denial.
-- The lines of the consent text: the server's title and words, the directory and the hash.
function M.consent_text(params)
  local plugin = type(params.plugin) == 'table' and params.plugin or {}
  local lines = {M.sanitize(params.title or 'Anvil: allow this plugin?'), ''}
  local text = tostring(params.text or ''):gsub('\n+$', '')
  for line in (text .. '\n'):gmatch('(.-)\n') do
    lines[#lines + 1] = (line:gsub('[%z\1-\8\11-\31\127]', ''))
  end
  lines[#lines + 1] = ''
  if plugin.dir then lines[#lines + 1] = 'Plugin directory: ' .. M.sanitize(plugin.dir) end
  if plugin.manifestSha256 then
    lines[#lines + 1] = 'Manifest SHA-256: ' .. M.sanitize(plugin.manifestSha256)
  end
  return lines
end

-- A floating window with `lines` in the middle of the editor, for a question; it is
-- M.consent_window (consent or an approval) while it is open. Returns the function closing it.
function M.prompt_window(lines)
  local bufnr = api.nvim_create_buf(false, true)
  api.nvim_buf_set_lines(bufnr, 0, -1, false, lines)
  vim.bo[bufnr].modifiable = false
  vim.bo[bufnr].bufhidden = 'wipe'
  local width = 20
  for _, l in ipairs(lines) do width = math.max(width, vim.fn.strdisplaywidth(l)) end
  width = math.min(width + 2, math.max(20, vim.o.columns - 4))
  local height = math.min(#lines, math.max(3, vim.o.lines - 6))
  local win = api.nvim_open_win(bufnr, false, {
    relative = 'editor', style = 'minimal', border = 'rounded', focusable = false,
    width = width, height = height,
    row = math.max(0, math.floor((vim.o.lines - height) / 2) - 2),
    col = math.max(0, math.floor((vim.o.columns - width) / 2)),
  })
  M.consent_window = {win = win, bufnr = bufnr, lines = lines}
  return function()
    if api.nvim_win_is_valid(win) then api.nvim_win_close(win, true) end
    M.consent_window = nil
  end
end

function M.consent(params, done)
  local plugin = type(params.plugin) == 'table' and params.plugin or {}
  local close = M.prompt_window(M.consent_text(params))
  local answered = false
  vim.ui.select({'approve', 'deny'}, {
    prompt = 'Allow plugin ' .. M.sanitize(plugin.id or '?') .. ' to run in this workspace?',
    format_item = function(item)
      return item == 'approve' and 'Approve exactly this request' or 'Deny'
    end,
  }, function(choice)
    if answered then return end
    answered = true
    close()
    done(choice == 'approve' and 'approve' or 'deny')
  end)
end

-- The question of anvil/approve: an agent's command (anvil/exec) may run, or its sandbox be
-- widened for it. Shown like the consent prompt: a floating window with exactly the server's
-- words (argv, cwd, mode, sandbox, widening; untrusted strings sanitized by the server and again
-- here), then vim.ui.select over exactly the choices the question offers. `done` gets "once",
-- "always" or "never"; no choice is "never".
function M.approve_text(params)
  local lines = {M.sanitize(params.title or 'Anvil: an agent wants to run a command'), ''}
  local text = tostring(params.text or ''):gsub('\n+$', '')
  for line in (text .. '\n'):gmatch('(.-)\n') do
    lines[#lines + 1] = (line:gsub('[%z\1-\8\11-\31\127]', ''))
  end
  if type(params.argv) == 'table' then
    local words = {}
    for _, w in ipairs(params.argv) do words[#words + 1] = vim.inspect(M.sanitize(w)) end
    lines[#lines + 1] = ''
    lines[#lines + 1] = 'argv: [' .. table.concat(words, ', ') .. ']'
  end
  if type(params.widening) == 'table' and type(params.widening.flags) == 'table' then
    local flags = {}
    for _, f in ipairs(params.widening.flags) do flags[#flags + 1] = M.sanitize(f) end
    lines[#lines + 1] = 'widening (this run only): ' .. table.concat(flags, ' ')
  end
  return lines
end

local approve_labels = {
  once = 'Once: run it this time',
  always = 'Always: allow this command from now on (writes an allow rule)',
  never = 'Never: refuse it',
}

function M.approve(params, done)
  local choices = {}
  for _, c in ipairs(type(params.choices) == 'table' and params.choices or {}) do
    if approve_labels[c] then choices[#choices + 1] = c end
  end
  if #choices == 0 then return done('never') end
  local lines = M.approve_text(params)
  local close = M.prompt_window(lines)
  local answered = false
  vim.ui.select(choices, {
    prompt = params.kind == 'widening' and 'Widen the sandbox for this command?'
        or 'Run this command?',
    format_item = function(item) return approve_labels[item] end,
  }, function(choice)
    if answered then return end
    answered = true
    close()
    done(approve_labels[choice] and choice or 'never')
  end)
end

-- A location-shaped value: a non-empty list of {path|uri|filename, line, ...}.
local function as_locations(value)
  if type(value) ~= 'table' or not vim.tbl_islist(value) or #value == 0 then return nil end
  for _, v in ipairs(value) do
    if type(v) ~= 'table' or type(v.line or v.lnum) ~= 'number'
        or type(v.path or v.uri or v.filename) ~= 'string' then
      return nil
    end
  end
  return value
end

local function file_of(loc, workspace)
  if type(loc.uri) == 'string' and loc.uri:match('^file://') then
    return vim.uri_to_fname(loc.uri)
  end
  local p = loc.path or loc.filename
  if p:sub(1, 1) == '/' then return p end
  return workspace .. '/' .. p
end

-- JSON, indented, keys sorted (so the same value always reads the same).
local function pretty(v, indent, out)
  indent = indent or ''
  out = out or {}
  local t = type(v)
  if t == 'table' then
    local inner = indent .. '  '
    if vim.tbl_islist(v) and (#v > 0 or getmetatable(v) ~= vim._empty_dict_mt) then
      if #v == 0 then return '[]' end
      local parts = {}
      for _, x in ipairs(v) do parts[#parts + 1] = inner .. pretty(x, inner) end
      return '[\n' .. table.concat(parts, ',\n') .. '\n' .. indent .. ']'
    end
    local keys = vim.tbl_keys(v)
    if #keys == 0 then return '{}' end
    table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
    local parts = {}
    for _, k in ipairs(keys) do
      parts[#parts + 1] = inner .. vim.json.encode(tostring(k)) .. ': ' .. pretty(v[k], inner)
    end
    return '{\n' .. table.concat(parts, ',\n') .. '\n' .. indent .. '}'
  elseif v == nil then
    return 'null'
  end
  return vim.json.encode(v)
end
M.pretty = pretty

-- Shows what a command returned: locations in the quickfix list, anything else in a scratch
-- buffer named after the command. Returns 'quickfix', 'scratch' or 'none'.
function M.show_result(plugin, command, value, workspace)
  local title = '[' .. plugin .. '] ' .. command
  local locations = as_locations(value)
  if locations then
    local items = {}
    for _, loc in ipairs(locations) do
      items[#items + 1] = {
        filename = file_of(loc, workspace),
        lnum = loc.line or loc.lnum,
        col = loc.column or loc.col or 1,
        text = M.sanitize(loc.text or loc.message or ''),
      }
    end
    vim.fn.setqflist({}, ' ', {title = title, items = items})
    vim.cmd('botright copen')
    return 'quickfix'
  end
  if value == nil then
    M.notify(title .. ': done')
    return 'none'
  end
  if type(value) == 'table' and next(value) == nil then
    M.notify(title .. ': no results')
    return 'none'
  end
  local text = type(value) == 'string' and value or pretty(value)
  local lines = vim.split(text, '\n', true)
  if #lines > 1 and lines[#lines] == '' then lines[#lines] = nil end
  M.scratch('anvil://' .. plugin .. '/' .. command, lines,
            type(value) ~= 'string' and 'json' or nil)
  return 'scratch'
end

return M
