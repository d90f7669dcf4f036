-- A plugin's notification reaches vim.notify attributed to it, on one line, with escape
-- sequences, control characters and bidi overrides shown as \u{...}, never sent raw.
local t = dofile(os.getenv('ANVIL_TEST_REPO') .. '/tests/editors/nvim/harness.lua')
t.run(function()
  t.setup({plugin_dirs = {t.test_plugins .. '/editor-test'}})
  local run = t.run_command('test.editor:noisy')
  t.eq(run.error, nil, 'the run error')
  local n = t.note('alert')
  t.ok(n, 'the notification arrived')
  t.eq(n.msg, '[test.editor] \\u{1b}[31mred\\u{1b}[0m alert\\u{1b}]0;title\\u{7} \\u{1b}[2Jdone'
       .. ' next\\u{202e} line\\u{0}\\u{8}!', 'the notification text')
  t.eq(n.title, 'Anvil: test.editor', 'the attribution')
  t.ok(not n.msg:find('[%z\1-\31\127]'), 'no control characters')
  t.ok(not n.msg:find('\226\128\174', 1, true), 'no bidi override')
  -- A string result goes to a scratch buffer named after the command.
  t.eq(run.shown, 'scratch', 'where the result went')
  t.eq(vim.api.nvim_buf_get_lines(vim.fn.bufnr('anvil://test.editor/noisy'), 0, -1, true),
       {'noisy done'}, 'the result buffer')
end)
