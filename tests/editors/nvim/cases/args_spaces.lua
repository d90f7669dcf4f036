-- :AnvilRun splits its arguments as a shell splits words: quotes group, a backslash escapes,
-- a quoted % is a percent sign and a bare % the current buffer.
local t = dofile(os.getenv('ANVIL_TEST_REPO') .. '/tests/editors/nvim/harness.lua')
t.run(function()
  t.setup({plugin_dirs = {t.test_plugins .. '/editor-test'}, auto_approve = true})
  vim.cmd('edit src/main.c')
  local run = t.run_command([[editor-test:args "a b" 'c  d' e\ f "g\"h" "" "%" %]])
  t.eq(run.error, nil, 'the run error')
  t.eq(run.value, {args = {'a b', 'c  d', 'e f', 'g"h', '', '%',
                           vim.uri_from_fname(t.ws .. '/src/main.c')}}, 'the arguments')
  -- Benign neighbour: plain words.
  t.eq(t.run_command('editor-test:args one two').value, {args = {'one', 'two'}}, 'plain words')
  -- An unterminated quote runs nothing and says why.
  local s = require('anvil').session()
  local count = #s.history
  vim.cmd('AnvilRun editor-test:args "open')
  t.ok(t.note('Anvil: unterminated double quote'), 'the unterminated quote')
  t.eq(#s.history, count, 'nothing ran')
end)
