-- Typing while a slow plugin computes: its edit, made against the snapshot it read before the
-- user typed, is refused as stale and reported; the buffer keeps what the user typed. And the
-- client's own check: an applyEdit for another version, or while a change is not sent yet, is
-- refused without touching the buffer.
local t = dofile(os.getenv('ANVIL_TEST_REPO') .. '/tests/editors/nvim/harness.lua')
t.run(function()
  -- A deadline far beyond the wait, so only a broken run can reach it on a loaded machine.
  t.setup({plugin_dirs = {t.test_plugins .. '/editor-test'}, args = {'--timeout', '120'}})
  vim.cmd('AnvilStart')
  vim.cmd('edit src/main.c')
  local before = vim.api.nvim_buf_get_lines(0, 0, -1, true)

  vim.cmd('AnvilRun editor-test:slow-edit %')
  t.wait(function() return t.note('[test.editor] snapshot of version') end,
         'the plugin to take its snapshot')
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes('ggOtyped meanwhile<Esc>', true, false,
                                                       true), 'xt', false)
  local s = require('anvil').session()
  local run = s.history[#s.history]
  t.wait(function() return run.done end, 'the slow command to finish')
  t.eq(run.error_code, 'stale', 'the plugin edit is refused as')
  t.ok(t.note('[test.editor] slow-edit failed: stale:'), 'the stale edit is reported')
  local want = vim.list_extend({'typed meanwhile'}, before)
  t.eq(vim.api.nvim_buf_get_lines(0, 0, -1, true), want, 'the buffer keeps the typing only')

  -- The client's own version check, on the edits anvil serve sends (workspace/applyEdit).
  local doc = s.docs:doc(vim.api.nvim_get_current_buf())
  t.wait(function() return not doc.dirty end, 'the typing to be sent')
  local function edit(version)
    return {label = '[test.editor] x', edit = {documentChanges = {{
      textDocument = {uri = doc.uri, version = version},
      edits = {{range = {start = {line = 0, character = 0}, ['end'] = {line = 0, character = 5}},
                newText = 'TYPED'}}}}}}
  end
  local answer = s.docs:apply_workspace_edit(edit(doc.version - 1), s.encoding)
  t.eq(answer.applied, false, 'an edit for an older version is applied')
  t.ok(answer.failureReason:find('^stale:'), 'the reason: ' .. answer.failureReason)
  vim.api.nvim_buf_set_lines(0, -1, -1, true, {'// not sent yet'})
  answer = s.docs:apply_workspace_edit(edit(doc.version), s.encoding)
  t.eq(answer.applied, false, 'an edit while a change is unsent is applied')
  t.eq(vim.api.nvim_buf_get_lines(0, 0, 1, true), {'typed meanwhile'}, 'the buffer untouched')
  t.wait(function() return not doc.dirty end, 'the change to be sent')
  answer = s.docs:apply_workspace_edit(edit(doc.version), s.encoding)
  t.eq(answer.applied, true, 'an edit for the current version is applied')
  t.eq(vim.api.nvim_buf_get_lines(0, 0, 1, true), {'TYPED meanwhile'}, 'the edit in the buffer')
end)
