-- Buffer sync (textDocument/didOpen, didChange, didClose) and versioned plugin edits.
--
-- The version the server knows for a buffer is the b:changedtick we last sent with its text.
-- An edit from a plugin is applied only when it names exactly that version and the buffer has
-- no change we have not sent yet; anything else is refused as stale, never merged: the plugin
-- computed it from text the user no longer sees (invariant 8, docs/protocol.md section 4).
-- Only file buffers inside the workspace are sent: the server would refuse the others, and
-- what the user edits elsewhere is none of the plugins' business.
local uv = vim.loop
local api = vim.api

local M = {}

local Tracker = {}
Tracker.__index = Tracker

-- `send(method, params)` writes a notification to the server.
function M.new(workspace, send)
  return setmetatable({workspace = workspace, send = send, docs = {}, by_uri = {}}, Tracker)
end

-- The text the server keeps for a buffer: its lines joined by "\n", with the final newline
-- Neovim writes when 'eol' is set (the same model as Neovim's LSP client).
function M.buffer_text(bufnr)
  local text = table.concat(api.nvim_buf_get_lines(bufnr, 0, -1, true), '\n')
  if vim.bo[bufnr].eol then text = text .. '\n' end
  return text
end

-- The canonical path of a buffer's file (also when it does not exist yet), or nil.
local function canonical_path(bufnr)
  local name = api.nvim_buf_get_name(bufnr)
  if name == '' or name:match('^%a[%w+.-]*://') then return nil end
  local full = vim.fn.fnamemodify(name, ':p')
  local real = uv.fs_realpath(full)
  if real then return real end
  local dir = uv.fs_realpath(vim.fn.fnamemodify(full, ':h'))
  if not dir then return nil end
  return dir .. '/' .. vim.fn.fnamemodify(full, ':t')
end

function Tracker:path_in_workspace(path)
  local root = self.workspace
  return path ~= nil and (path == root or path:sub(1, #root + 1) == root .. '/')
end

function Tracker:eligible(bufnr)
  if not api.nvim_buf_is_loaded(bufnr) or vim.bo[bufnr].buftype ~= '' then return nil end
  local path = canonical_path(bufnr)
  if not self:path_in_workspace(path) then return nil end
  return path
end

function Tracker:doc(bufnr) return self.docs[bufnr] end
function Tracker:doc_by_uri(uri) return self.by_uri[uri] end

-- Sends what changed since the last didChange (the whole text: simple and never wrong).
function Tracker:flush(doc)
  if doc.closed or not doc.dirty then return end
  if not api.nvim_buf_is_loaded(doc.bufnr) then return self:close(doc.bufnr) end
  local version = api.nvim_buf_get_changedtick(doc.bufnr)
  -- Versions must increase; an 'eol' change alone does not move changedtick.
  if version <= doc.version then version = doc.version + 1 end
  doc.dirty = false
  doc.version = version
  self.send('textDocument/didChange', {
    textDocument = {uri = doc.uri, version = version},
    contentChanges = {{text = M.buffer_text(doc.bufnr)}},
  })
end

function Tracker:flush_all()
  for _, doc in pairs(self.docs) do self:flush(doc) end
end

function Tracker:mark_dirty(doc)
  doc.dirty = true
  if doc.flush_scheduled then return end
  doc.flush_scheduled = true
  -- Coalesces the changes of one command (a paste, a :s) into one didChange.
  vim.schedule(function()
    doc.flush_scheduled = false
    self:flush(doc)
  end)
end

function Tracker:open(bufnr)
  if bufnr == 0 then bufnr = api.nvim_get_current_buf() end
  if self.docs[bufnr] then return self.docs[bufnr] end
  local path = self:eligible(bufnr)
  if not path then return nil end
  local uri = vim.uri_from_fname(path)
  if self.by_uri[uri] then return nil end  -- the same file in two buffers: the first one wins
  local doc = {bufnr = bufnr, uri = uri, path = path,
               version = api.nvim_buf_get_changedtick(bufnr), dirty = false}
  self.docs[bufnr], self.by_uri[uri] = doc, doc
  local ft = vim.bo[bufnr].filetype
  self.send('textDocument/didOpen', {textDocument = {
    uri = uri, languageId = ft ~= '' and ft or 'plaintext', version = doc.version,
    text = M.buffer_text(bufnr)}})
  api.nvim_buf_attach(bufnr, false, {
    -- Returning true detaches: a closed doc (or a reopened buffer's old doc) stops listening.
    on_lines = function()
      if doc.closed then return true end
      self:mark_dirty(doc)
    end,
    on_reload = function()
      if not doc.closed then self:mark_dirty(doc) end
    end,
    on_detach = function()
      vim.schedule(function() self:close(bufnr, doc) end)
    end,
  })
  return doc
end

function Tracker:close(bufnr, only)
  local doc = self.docs[bufnr]
  if not doc or (only and doc ~= only) or doc.closed then return end
  doc.closed = true
  self.docs[bufnr], self.by_uri[doc.uri] = nil, nil
  self.send('textDocument/didClose', {textDocument = {uri = doc.uri}})
end

function Tracker:close_all()
  for bufnr in pairs(self.docs) do self:close(bufnr) end
end

-- Byte offset in `text` of an LSP position; `line_starts` are the offsets of each line.
local function offset_of(text, line_starts, pos, encoding)
  if type(pos) ~= 'table' or type(pos.line) ~= 'number' or type(pos.character) ~= 'number'
      or pos.line < 0 or pos.character < 0 then
    return nil
  end
  local start = line_starts[pos.line + 1]
  if not start then return #text end  -- past the last line: the end (as LSP clamps)
  local line_end = (line_starts[pos.line + 2] or #text + 2) - 2  -- last byte before "\n"
  local line = text:sub(start + 1, line_end + 1)
  local col = pos.character
  if encoding ~= 'utf-8' then
    local ok, b = pcall(vim.str_byteindex, line, col, encoding == 'utf-16')
    col = ok and b or #line
  end
  return start + math.min(col, #line)
end

-- Applies `edits` (LSP TextEdits) to `text`; returns the new text or nil, reason.
function M.apply_to_text(text, edits, encoding)
  local line_starts, at = {0}, 1
  while true do
    local nl = text:find('\n', at, true)
    if not nl then break end
    line_starts[#line_starts + 1] = nl
    at = nl + 1
  end
  local spans = {}
  for i, e in ipairs(edits) do
    if type(e) ~= 'table' or type(e.newText) ~= 'string' or type(e.range) ~= 'table' then
      return nil, 'malformed edit ' .. i
    end
    local a = offset_of(text, line_starts, e.range.start, encoding)
    local b = offset_of(text, line_starts, e.range['end'], encoding)
    if not a or not b or b < a then return nil, 'malformed range in edit ' .. i end
    spans[#spans + 1] = {a = a, b = b, text = e.newText, i = i}
  end
  table.sort(spans, function(x, y) return x.a < y.a or (x.a == y.a and x.i < y.i) end)
  local out, copied = {}, 0
  for i, s in ipairs(spans) do
    if i > 1 and s.a < spans[i - 1].b then return nil, 'edits overlap' end
    out[#out + 1] = text:sub(copied + 1, s.a)
    out[#out + 1] = s.text
    copied = s.b
  end
  out[#out + 1] = text:sub(copied + 1)
  return table.concat(out)
end

-- Puts `text` into the buffer, touching only the lines that differ (marks, cursor and folds on
-- the rest stay where they are).
local function set_buffer_text(bufnr, text)
  local eol = text:sub(-1) == '\n'
  if eol then text = text:sub(1, -2) end
  local new = vim.split(text, '\n', true)
  local old = api.nvim_buf_get_lines(bufnr, 0, -1, true)
  local p = 0
  while p < #old and p < #new and old[p + 1] == new[p + 1] do p = p + 1 end
  local s = 0
  while s < #old - p and s < #new - p and old[#old - s] == new[#new - s] do s = s + 1 end
  if p + s < #old or p + s < #new then
    api.nvim_buf_set_lines(bufnr, p, #old - s, true, vim.list_slice(new, p + 1, #new - s))
  end
  if vim.bo[bufnr].eol ~= eol then vim.bo[bufnr].eol = eol end
end

-- The answer to workspace/applyEdit: {applied = true} or {applied = false, failureReason}.
-- All or nothing: every document is checked before any is changed.
function Tracker:apply_workspace_edit(params, encoding)
  local changes = type(params) == 'table' and type(params.edit) == 'table'
      and params.edit.documentChanges
  if type(changes) ~= 'table' or #changes == 0 then
    return {applied = false, failureReason = 'only versioned documentChanges are applied'}
  end
  local planned = {}
  for _, change in ipairs(changes) do
    local td = type(change) == 'table' and change.textDocument
    if type(td) ~= 'table' or type(td.uri) ~= 'string' or type(td.version) ~= 'number'
        or type(change.edits) ~= 'table' then
      return {applied = false, failureReason = 'malformed document change'}
    end
    local doc = self.by_uri[td.uri]
    if not doc or doc.closed or not api.nvim_buf_is_loaded(doc.bufnr) then
      return {applied = false, failureReason = 'the buffer is not open: ' .. td.uri}
    end
    if doc.dirty or td.version ~= doc.version then
      local now = doc.dirty and api.nvim_buf_get_changedtick(doc.bufnr) or doc.version
      return {applied = false, failureReason = string.format(
        'stale: the buffer changed since version %d (it is at %d)', td.version, now)}
    end
    if not vim.bo[doc.bufnr].modifiable then
      return {applied = false, failureReason = 'the buffer is not modifiable'}
    end
    local new, why = M.apply_to_text(M.buffer_text(doc.bufnr), change.edits, encoding)
    if not new then return {applied = false, failureReason = why} end
    planned[#planned + 1] = {doc = doc, text = new}
  end
  for _, p in ipairs(planned) do
    set_buffer_text(p.doc.bufnr, p.text)
    -- An 'eol' change alone fires no on_lines; mark it so the server hears of it too.
    self:mark_dirty(p.doc)
  end
  return {applied = true}
end

return M
