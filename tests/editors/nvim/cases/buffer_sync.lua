-- Plugins see what the user sees: an unsaved change is visible to them, a buffer outside the
-- workspace is never sent, and a closed buffer is gone for them.
local t = dofile(os.getenv('ANVIL_TEST_REPO') .. '/tests/editors/nvim/harness.lua')
t.run(function()
  t.setup({plugin_dirs = {t.test_plugins .. '/editor-test'}})
  vim.cmd('edit notes/README.txt')  -- opened before the session starts: sent when it starts
  vim.cmd('AnvilStart')
  vim.api.nvim_buf_set_lines(0, 0, -1, true, {'changed, not saved', 'second line'})
  local run = t.run_command('editor-test:peek notes/README.txt')
  t.eq(run.error, nil, 'the run error')
  t.eq(run.value.text, 'changed, not saved\nsecond line\n', 'what the plugin sees')
  t.eq(run.value.uri, vim.uri_from_fname(t.ws .. '/notes/README.txt'), 'the uri')
  t.eq(run.shown, 'scratch', 'a table result goes to a scratch buffer')
  local shown = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, true), '\n')
  t.ok(shown:find('"text": "changed, not saved\\nsecond line\\n"', 1, true), 'shown:\n' .. shown)

  local outside = vim.fn.tempname() .. '.txt'
  vim.fn.writefile({'secret'}, outside)
  vim.cmd('edit ' .. outside)
  local s = require('anvil').session()
  t.eq(s.docs:doc(vim.api.nvim_get_current_buf()), nil, 'a buffer outside the workspace is tracked')
  vim.cmd('bwipeout!')
  vim.fn.delete(outside)

  local bufnr = vim.fn.bufnr(t.ws .. '/notes/README.txt')
  vim.cmd('bwipeout! ' .. bufnr)
  run = t.run_command('editor-test:peek notes/README.txt')
  t.eq(run.error_code, 'not_found', 'a closed buffer for the plugin')
end)
