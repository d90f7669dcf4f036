-- :AnvilExec runs a shell command line through anvil/exec; the question comes back as
-- anvil/approve and is shown like consent (a floating window with the exact argv, then
-- vim.ui.select over exactly the choices offered). Once runs it; never refuses it.
local t = dofile(os.getenv('ANVIL_TEST_REPO') .. '/tests/editors/nvim/harness.lua')
t.run(function()
  t.setup({args = {'--approval', 'untrusted'}})

  t.consent_answer = 'once'
  local run = require('anvil').exec('touch made-by-nvim && echo done')
  t.ok(run, 'an exec run')
  t.wait(function() return run.done end, 'the command to finish')
  t.eq(#t.consents, 1, 'one question')
  local q = t.consents[1]
  t.eq(q.items, {'once', 'always', 'never'}, 'the choices the question offers')
  t.ok(q.prompt:find('Run this command?', 1, true), 'the prompt: ' .. q.prompt)
  t.ok(q.float and q.float.relative == 'editor', 'the question is shown in a floating window')
  local shown = table.concat(q.lines, '\n')
  io.stderr:write('approve window:\n' .. shown .. '\n')
  t.ok(shown:find('touch made-by-nvim && echo done', 1, true), 'the command is shown:\n' .. shown)
  t.ok(shown:find('argv: ["sh", "-c", "touch made-by-nvim && echo done"]', 1, true),
       'the exact argv:\n' .. shown)
  t.ok(shown:find('cwd:', 1, true) and shown:find(t.ws, 1, true), 'the directory:\n' .. shown)
  t.ok(shown:find('workspace-write', 1, true), 'the sandbox:\n' .. shown)
  t.ok(require('anvil.ui').consent_window == nil, 'the window is closed after the answer')
  t.ok(not run.error, 'no error: ' .. vim.inspect(run.error))
  t.eq(run.result.exit, 0, 'exit status')
  t.eq(run.result.questions[1].answer, 'once', 'the answer as the server recorded it')
  t.ok(vim.loop.fs_stat(t.ws .. '/made-by-nvim'), 'the command ran in the workspace')
  local buf = vim.fn.bufnr('anvil://exec')
  t.ok(buf ~= -1, 'the result buffer')
  local text = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, true), '\n')
  t.ok(text:find('exit 0', 1, true) and text:find('done', 1, true), 'the result:\n' .. text)

  -- Never: refused, nothing runs; the result says so.
  t.consent_answer = 'never'
  vim.cmd('AnvilExec touch refused-by-nvim')
  run = require('anvil').last_exec
  t.wait(function() return run.done end, 'the refused command to be answered')
  t.eq(#t.consents, 2, 'a second question')
  t.eq(run.result.exit, 3, 'refused')
  t.ok(not vim.loop.fs_stat(t.ws .. '/refused-by-nvim'), 'nothing ran')
  text = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, true), '\n')
  t.ok(text:find('refused:', 1, true), 'the refusal is shown:\n' .. text)
end)
