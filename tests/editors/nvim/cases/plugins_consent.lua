-- :AnvilPlugins lists plugins, grant state and commands; :AnvilApprove shows the exact request
-- in a floating window and asks through vim.ui.select; a denial grants nothing.
local t = dofile(os.getenv('ANVIL_TEST_REPO') .. '/tests/editors/nvim/harness.lua')
t.run(function()
  t.setup({plugin_dirs = {t.examples .. '/todo-finder', t.examples .. '/fmt-js'}})
  vim.cmd('AnvilPlugins')
  local buf = vim.fn.bufnr('anvil://plugins')
  t.ok(buf ~= -1, 'a plugins buffer')
  local text = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, true), '\n')
  t.ok(text:find('example.todo-finder 0.1.0 (lua)  state: needs_consent  grant: needs_consent',
                 1, true), 'todo-finder listed as needing consent:\n' .. text)
  t.ok(text:find('example.fmt 0.1.0 (js)  state: needs_consent', 1, true), 'fmt listed:\n' .. text)
  t.ok(text:find('requests: fs.read **; exec rg', 1, true), 'the request summarised:\n' .. text)
  t.ok(text:find('commands: (not loaded)', 1, true), 'no commands before a grant:\n' .. text)

  -- Deny: nothing is granted, the plugin stays where it was.
  t.consent_answer = 'deny'
  vim.cmd('AnvilApprove example.fmt')
  t.wait(function() return t.note('example.fmt not approved') end, 'the denial to be reported')
  t.eq(#t.consents, 1, 'one prompt')
  t.eq(t.plugin('example.fmt').state, 'needs_consent', 'fmt after the denial')

  -- Approve: the prompt shows the server's words for exactly this request.
  t.consent_answer = 'approve'
  vim.cmd('AnvilApprove example.todo-finder')
  t.wait(function() return t.note('example.todo-finder approved') end, 'the approval')
  t.eq(#t.consents, 2, 'a second prompt')
  local c = t.consents[2]
  t.eq(c.items, {'approve', 'deny'}, 'the choices')
  t.ok(c.prompt:find('example.todo-finder', 1, true), 'the prompt names the plugin')
  t.ok(c.float and c.float.relative == 'editor', 'the request is shown in a floating window')
  local shown = table.concat(c.lines, '\n')
  io.stderr:write('consent window:\n' .. shown .. '\n')
  t.ok(c.lines[1]:find('example.todo-finder', 1, true), 'the title names the plugin:\n' .. shown)
  t.ok(shown:find('"**"', 1, true), 'the fs.read glob is shown:\n' .. shown)
  t.ok(shown:find('rg', 1, true), 'the program is shown:\n' .. shown)
  t.ok(shown:find('Manifest SHA-256: ' .. t.plugin('example.todo-finder').manifestSha256, 1, true),
       'the manifest hash is shown:\n' .. shown)
  t.ok(require('anvil.ui').consent_window == nil, 'the window is closed after the answer')

  t.wait_state('example.todo-finder', 'ready')
  vim.cmd('AnvilPlugins')
  text = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, true), '\n')
  t.ok(text:find('example.todo-finder 0.1.0 (lua)  state: ready', 1, true), 'ready:\n' .. text)
  t.ok(text:find('commands: find-todos', 1, true), 'its commands are listed:\n' .. text)
  t.eq(require('anvil').complete_commands('find'), {'find-todos'}, 'completion of :AnvilRun')

  -- In the list, `a` on a plugin's lines asks for that plugin.
  local win = vim.fn.bufwinid(buf)
  vim.api.nvim_set_current_win(win)
  local lines = vim.api.nvim_buf_get_lines(buf, 0, -1, true)
  for i, l in ipairs(lines) do
    if l:find('^example.fmt ') then vim.api.nvim_win_set_cursor(win, {i + 1, 0}) end
  end
  vim.api.nvim_feedkeys('a', 'xt', false)
  t.wait(function() return t.note('example.fmt approved') end, 'the approval from the list')
  t.eq(#t.consents, 3, 'a third prompt')
  t.ok(t.consents[3].prompt:find('example.fmt', 1, true), 'for fmt')
  t.wait_state('example.fmt', 'ready')
end)
