-- The formatter (examples/plugins/fmt-js) reads the buffer as the user left it (unsaved, synced
-- through didOpen/didChange) and its edit lands in the real buffer, not in the file.
local t = dofile(os.getenv('ANVIL_TEST_REPO') .. '/tests/editors/nvim/harness.lua')
t.run(function()
  t.setup({plugin_dirs = {t.examples .. '/fmt-js'}})
  vim.cmd('AnvilStart')
  vim.cmd('edit src/main.c')
  local on_disk = table.concat(vim.fn.readfile(t.ws .. '/src/main.c'), '\n')
  -- Typed, not saved: trailing blanks, a tab, blank lines at the end.
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes(
    'Goint answer = 42;   <Esc>o\tint x;\t <Esc>o<Esc>o<Esc>', true, false, true), 'xt', false)
  t.eq(vim.api.nvim_buf_get_lines(0, -6, -1, true),
       {'}', 'int answer = 42;   ', '\tint x;\t ', '', ''}, 'the typed text')

  local run = t.run_command('fmt-js:format %')
  t.eq(run.error, nil, 'the run error')
  t.eq(run.value and run.value.changed, true, 'the plugin changed the buffer')
  t.eq(run.shown, 'notify', 'an edit is the result: no result window')
  t.eq(vim.api.nvim_buf_get_name(0), t.ws .. '/src/main.c', 'the current buffer')
  t.eq(vim.api.nvim_buf_get_lines(0, -5, -1, true),
       {'  return 0;', '}', 'int answer = 42;', '    int x;'}, 'the formatted buffer')
  t.ok(vim.bo.modified, 'the buffer is modified, not written')
  t.eq(table.concat(vim.fn.readfile(t.ws .. '/src/main.c'), '\n'), on_disk, 'the file on disk')

  -- Formatting again changes nothing: the server's copy followed the applied edit.
  run = t.run_command('format %')
  t.eq(run.error, nil, 'the second run error')
  t.eq(run.value and run.value.changed, false, 'nothing left to format')
end)
