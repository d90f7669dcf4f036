-- :AnvilRun on a plugin not approved yet asks first, then runs it with progress; a result made
-- of locations lands in the quickfix list; the plugin's notification is attributed to it.
local t = dofile(os.getenv('ANVIL_TEST_REPO') .. '/tests/editors/nvim/harness.lua')
t.run(function()
  t.setup({plugin_dirs = {t.examples .. '/todo-finder'}})
  local run = t.run_command('todo-finder:find-todos')
  t.eq(run.error, nil, 'the run error')
  t.eq(#t.consents, 1, 'consent was asked once')
  t.eq(run.shown, 'quickfix', 'where the result went')

  local qf = vim.fn.getqflist({title = 1, items = 1})
  t.eq(qf.title, '[example.todo-finder] find-todos', 'the quickfix title')
  local got = {}
  for _, item in ipairs(qf.items) do
    got[#got + 1] = {vim.api.nvim_buf_get_name(item.bufnr), item.lnum, item.col, item.text}
  end
  table.sort(got, function(a, b) return a[1] < b[1] end)
  t.eq(got, {
    {t.ws .. '/README.md', 3, 57,
     'A tiny project used by `scripts/demo.sh` and the tests. TODO: add more files.'},
    {t.ws .. '/src/main.c', 3, 4, '// TODO: read the greeting from a config file'},
  }, 'the quickfix items')
  t.ok(vim.fn.getqflist({winid = 1}).winid ~= 0, 'the quickfix window is open')

  local kinds = vim.tbl_map(function(v) return v.kind end, run.progress)
  t.eq(kinds[1], 'begin', 'progress begins')
  t.eq(kinds[#kinds], 'end', 'progress ends')
  t.eq(run.title, '[example.todo-finder] find-todos', 'the progress title')

  local n = t.note('markers found')
  t.ok(n, 'the plugin notification arrived')
  t.eq(n.msg, '[example.todo-finder] 2 markers found', 'the notification')
  t.eq(n.title, 'Anvil: example.todo-finder', 'the notification is attributed')

  -- Now that it is ready, the bare command name is enough.
  run = t.run_command('find-todos FIXME')
  t.eq(run.args, {'FIXME'}, 'the arguments passed on')
  t.eq(run.shown, 'none', 'an empty result')
  t.ok(t.note('[example.todo-finder] find-todos: no results'), 'an empty result is reported')
end)
