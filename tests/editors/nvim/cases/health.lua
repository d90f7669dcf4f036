-- :checkhealth anvil, and what the client says when anvil is not where `cmd` says.
local t = dofile(os.getenv('ANVIL_TEST_REPO') .. '/tests/editors/nvim/harness.lua')

local function health()
  vim.cmd('checkhealth anvil')
  local text = table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, true), '\n')
  io.stderr:write(text .. '\n')
  vim.cmd('tabclose')
  return text
end

t.run(function()
  -- Not on PATH: a message that says how to set cmd, no session, no error thrown.
  require('anvil').setup({cmd = {'anvil-not-installed'}})
  vim.cmd('AnvilRun anything')
  local note = t.note("'anvil-not-installed' is not on PATH")
  t.ok(note, 'the missing binary is named')
  t.ok(note.msg:find("setup({cmd = {'/path/to/anvil'}})", 1, true), 'how to set cmd: ' .. note.msg)
  t.eq(require('anvil').session(), nil, 'no session')
  local text = health()
  t.ok(text:find("ERROR:? 'anvil%-not%-installed' is not on PATH"), 'checkhealth says so:\n' .. text)

  t.setup({plugin_dirs = {t.examples .. '/todo-finder', t.ws .. '/src'}})
  text = health()
  t.ok(text:find('found: ' .. t.bin, 1, true), 'the binary:\n' .. text)
  t.ok(text:find('version: ', 1, true), 'a version line, known or not:\n' .. text)
  t.ok(text:find('Untrusted plugins and commands can run with every required layer', 1, true),
       "the doctor's summary:\n" .. text)
  -- Plain finds: the paths may hold pattern characters ('-' in a clone's directory name).
  local ok_dir = 'plugin_dirs: ' .. t.examples .. '/todo-finder'
  t.ok(text:find('OK: ' .. ok_dir, 1, true) or text:find('OK ' .. ok_dir, 1, true),
       'a plugin dir:\n' .. text)
  t.ok(text:find('plugin_dirs: ' .. t.ws .. '/src has no anvil-plugin.toml', 1, true),
       'a directory that is no plugin:\n' .. text)
  t.ok(text:find('not running: it starts on the first', 1, true), 'no session yet:\n' .. text)

  vim.cmd('AnvilStart')
  text = health()
  t.ok(text:find('OK:? gateway: running %(pid %d+'), 'the gateway:\n' .. text)
  t.ok(text:find('workspace: ' .. t.ws, 1, true), 'the workspace:\n' .. text)
end)
