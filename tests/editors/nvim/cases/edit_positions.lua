-- The client's edit arithmetic: LSP positions in UTF-8 bytes or UTF-16 code units, edits at
-- the very end of the buffer, several edits at once, overlaps refused, and a buffer without a
-- final newline.
local t = dofile(os.getenv('ANVIL_TEST_REPO') .. '/tests/editors/nvim/harness.lua')
local buffers = require('anvil.buffers')
local function pos(line, character) return {line = line, character = character} end
local function e(l1, c1, l2, c2, text)
  return {range = {start = pos(l1, c1), ['end'] = pos(l2, c2)}, newText = text}
end

t.run(function()
  local apply = buffers.apply_to_text
  t.eq(apply('abc\n', {e(0, 1, 0, 2, 'X')}, 'utf-8'), 'aXc\n', 'a middle byte')
  -- "é" is 2 bytes, 1 UTF-16 unit; "𝄞" is 4 bytes, 2 UTF-16 units.
  t.eq(apply('é𝄞x\n', {e(0, 3, 0, 4, 'Y')}, 'utf-16'), 'é𝄞Y\n', 'after a surrogate pair')
  t.eq(apply('é𝄞x\n', {e(0, 6, 0, 7, 'Y')}, 'utf-8'), 'é𝄞Y\n', 'the same in bytes')
  t.eq(apply('a\nb\n', {e(0, 0, 2, 0, 'whole\n')}, 'utf-8'), 'whole\n',
       'up to the line after the end')
  t.eq(apply('a\nb\n', {e(2, 0, 2, 0, 'c\n')}, 'utf-8'), 'a\nb\nc\n', 'an insertion at the end')
  t.eq(apply('a\nb', {e(1, 1, 1, 1, '!')}, 'utf-8'), 'a\nb!', 'no final newline')
  t.eq(apply('a\nb\n', {e(0, 9, 0, 9, '?')}, 'utf-8'), 'a?\nb\n', 'a column past the end clamps')
  t.eq(apply('one two\n', {e(0, 4, 0, 7, '2'), e(0, 0, 0, 3, '1')}, 'utf-8'), '1 2\n', 'two edits')
  local r, why = apply('abc\n', {e(0, 0, 0, 2, 'X'), e(0, 1, 0, 3, 'Y')}, 'utf-8')
  t.eq({r, why}, {nil, 'edits overlap'}, 'overlapping edits')

  -- Through a real buffer: only the changed lines are replaced, and 'eol' follows the text.
  t.setup({})
  vim.cmd('AnvilStart')
  vim.cmd('edit src/main.c')
  local s = require('anvil').session()
  local doc = s.docs:doc(vim.api.nvim_get_current_buf())
  t.ok(doc, 'src/main.c is synced')
  vim.api.nvim_win_set_cursor(0, {5, 2})
  local answer = s.docs:apply_workspace_edit({edit = {documentChanges = {{
    textDocument = {uri = doc.uri, version = doc.version},
    edits = {e(0, 0, 0, 0, '// formatted\n')}}}}}, 'utf-8')
  t.eq(answer, {applied = true}, 'the answer')
  t.eq(vim.api.nvim_buf_get_lines(0, 0, 2, true), {'// formatted', '#include <stdio.h>'}, 'the top')
  t.eq(vim.api.nvim_win_get_cursor(0), {6, 2}, 'the cursor moved with its line')
  t.wait(function() return not doc.dirty end, 'the edit to be sent back')
  local text = buffers.buffer_text(0)
  answer = s.docs:apply_workspace_edit({edit = {documentChanges = {{
    textDocument = {uri = doc.uri, version = doc.version},
    edits = {e(0, 0, 9, 0, (text:gsub('\n$', '')))}}}}}, 'utf-8')
  t.eq(answer, {applied = true}, 'dropping the final newline')
  t.eq(vim.bo.eol, false, "'eol'")
  t.eq(buffers.buffer_text(0), (text:gsub('\n$', '')), 'the text')
  answer = s.docs:apply_workspace_edit({edit = {documentChanges = {{
    textDocument = {uri = 'file:///nowhere/x.c', version = 1}, edits = {}}}}}, 'utf-8')
  t.eq(answer.applied, false, 'an edit of a buffer that is not open')
end)
