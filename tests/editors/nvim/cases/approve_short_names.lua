-- :AnvilApprove and :AnvilReload take the names :AnvilRun takes (the id, its last part, the
-- plugin's directory name); :AnvilApprove! and setup{auto_approve} grant without the
-- interactive choice (headless Neovim, CI), and the consent text is still shown.
local t = dofile(os.getenv('ANVIL_TEST_REPO') .. '/tests/editors/nvim/harness.lua')
t.run(function()
  t.setup({plugin_dirs = {t.examples .. '/todo-finder', t.examples .. '/fmt-js',
                          t.test_plugins .. '/editor-test'}})

  -- The directory name, with a bang: no picker, the request shown, the plugin ready.
  vim.cmd('AnvilApprove! todo-finder')
  t.wait(function() return t.note('example.todo-finder approved') end, 'the approval')
  t.eq(#t.consents, 0, 'no interactive choice')
  local shown = t.note('approved without asking')
  t.ok(shown, 'the consent text is shown')
  t.ok(shown.msg:find('example.todo-finder', 1, true), 'it names the plugin:\n' .. shown.msg)
  t.ok(shown.msg:find('rg', 1, true), 'it shows the program:\n' .. shown.msg)
  t.ok(shown.msg:find('Manifest SHA-256: ' .. t.plugin('example.todo-finder').manifestSha256, 1,
                      true), 'it shows the manifest hash:\n' .. shown.msg)
  t.ok(vim.tbl_contains(require('anvil').log_lines(), 'Plugin directory: ' .. t.examples
                        .. '/todo-finder'), 'and :AnvilLog keeps it')
  t.wait_state('example.todo-finder', 'ready')

  -- The id's last part, without a bang: asked as before.
  vim.cmd('AnvilApprove fmt')
  t.wait(function() return t.note('example.fmt approved') end, 'the approval of fmt')
  t.eq(#t.consents, 1, 'one prompt')
  t.ok(t.consents[1].prompt:find('example.fmt', 1, true), 'for example.fmt')

  -- A bang approves that request only: the next plugin is asked again.
  t.consent_answer = 'deny'
  vim.cmd('AnvilApprove editor-test')
  t.wait(function() return t.note('test.editor not approved') end, 'the denial')
  t.eq(#t.consents, 2, 'asked for test.editor')

  -- setup{auto_approve = {ids}}: a run that needs consent goes ahead without the picker.
  t.setup({auto_approve = {'test.editor'}})
  local run = t.run_command('editor-test:args x')
  t.eq(run.error, nil, 'the run after auto approval')
  t.eq(#t.consents, 2, 'no third prompt')
  t.ok(t.note('(approved without asking: auto_approve or :AnvilApprove!)'), 'the text shown')

  -- :AnvilReload by directory name and by the id's last part.
  local old = t.plugin('example.todo-finder')
  t.record_pids({old.pid})
  vim.cmd('AnvilReload todo-finder')
  t.wait(function() return t.note('example.todo-finder reloaded') end, 'the reload')
  t.ok(t.plugin('example.todo-finder').pid ~= old.pid, 'a new host')
  vim.cmd('AnvilReload fmt')
  t.wait(function() return t.note('example.fmt reloaded') end, 'the reload of fmt')

  -- A name that is no plugin says so, and asks nothing.
  vim.cmd('AnvilApprove nope')
  t.ok(t.note('Anvil: no plugin nope'), 'an unknown name')
end)
