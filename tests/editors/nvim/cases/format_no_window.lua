-- A formatter path that leaves the layout alone: :AnvilFormat and 'formatexpr' apply the
-- plugin's edit to the current buffer without opening a window or moving the cursor's window,
-- and a command whose output was an edit opens no split, whatever it returns.
local t = dofile(os.getenv('ANVIL_TEST_REPO') .. '/tests/editors/nvim/harness.lua')

local function layout()
  return {win = vim.api.nvim_get_current_win(), wins = #vim.api.nvim_list_wins(),
          tabs = #vim.api.nvim_list_tabpages(), buf = vim.api.nvim_get_current_buf()}
end

t.run(function()
  t.setup({plugin_dirs = {t.examples .. '/fmt-js', t.test_plugins .. '/editor-test'},
           auto_approve = {'example.fmt', 'test.editor'}})
  vim.cmd('AnvilStart')
  vim.cmd('edit src/main.c')
  local before = layout()
  vim.api.nvim_buf_set_lines(0, -1, -1, true, {'int a = 1;   ', '\tint b;\t'})

  -- No formatter set: :AnvilFormat says how to set one.
  vim.cmd('AnvilFormat')
  t.ok(t.note("no formatter: :AnvilFormat [PLUGIN:]COMMAND"), 'the missing formatter')

  vim.cmd('AnvilFormat fmt-js:format')
  local s = require('anvil').session()
  local run = s.history[#s.history]
  t.wait(function() return run.done end, ':AnvilFormat to finish')
  t.eq(run.error, nil, 'the format error')
  t.eq(vim.api.nvim_buf_get_lines(0, -3, -1, true), {'int a = 1;', '    int b;'},
       'the formatted buffer')
  t.eq(run.shown, 'notify', 'no result window')
  t.eq(layout(), before, 'the layout after :AnvilFormat')
  t.eq(vim.fn.bufnr('anvil://example.fmt/format'), -1, 'no scratch buffer')

  -- formatexpr: gq formats through the plugin and returns when the edit is in.
  t.setup({format = 'fmt-js:format'})
  vim.bo.formatexpr = "v:lua.require'anvil'.formatexpr()"
  vim.api.nvim_buf_set_lines(0, -1, -1, true, {'int c;  '})
  local runs = #s.history
  vim.cmd('normal! Ggqq')
  t.eq(#s.history, runs + 1, 'gq ran the formatter')
  t.ok(s.history[#s.history].done, 'and waited for it')
  t.eq(vim.api.nvim_buf_get_lines(0, -3, -1, true), {'    int b;', 'int c;'},
       'formatted by gq, synchronously')
  t.eq(layout(), before, 'the layout after gq')

  -- A command that edited the buffer and returned a string: a message, no split.
  local shout = t.run_command('editor-test:shout %')
  t.eq(shout.error, nil, 'the shout error')
  t.eq(vim.api.nvim_buf_get_lines(0, 0, 1, true)[1],
       vim.fn.readfile(t.ws .. '/src/main.c')[1]:upper(), 'the edited first line')
  t.eq(shout.shown, 'notify', 'the edit is the output')
  t.ok(t.note('[test.editor] shout: edited the buffer: shouted'), 'said in one line')
  t.eq(layout(), before, 'the layout after the edit')
  t.eq(vim.fn.bufnr('anvil://test.editor/shout'), -1, 'no scratch buffer for the string')

  -- Benign neighbour: a command that only returns a value still shows it in a window.
  local args = t.run_command('editor-test:args x')
  t.eq(args.shown, 'scratch', 'a plain result opens its window')
end)
