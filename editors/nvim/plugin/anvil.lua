-- Anvil: run untrusted editor plugins in Anvil's sandboxes (editors/nvim/README.md).
if vim.g.loaded_anvil then return end
vim.g.loaded_anvil = true

local function anvil() return require('anvil') end
local cmd = vim.api.nvim_create_user_command

cmd('AnvilStart', function()
  local s, err = anvil().start()
  if not s then vim.notify('Anvil: ' .. err, vim.log.levels.ERROR, {title = 'Anvil'}) end
end, {desc = 'Start anvil serve for this workspace'})
cmd('AnvilStop', function() anvil().stop() end, {desc = 'Stop anvil serve and its plugins'})
cmd('AnvilPlugins', function() anvil().show_plugins() end,
    {desc = 'List Anvil plugins, their grants and commands'})
cmd('AnvilApprove', function(o)
  anvil().approve(o.args, nil, {without_asking = o.bang})
end, {
  nargs = 1, bang = true,
  desc = 'Ask to grant a plugin what it requests (!: grant it without asking; the request is shown)',
  complete = function(lead) return anvil().complete_plugins(lead) end,
})
-- Words as a shell splits them: `:AnvilRun cmd "a b"` passes one argument.
local function words(o)
  local w, literal = require('anvil.args').split(o.args)
  if not w then
    vim.notify('Anvil: ' .. literal, vim.log.levels.ERROR, {title = 'Anvil'})
    return nil
  end
  return w, literal
end
cmd('AnvilRun', function(o)
  local w, literal = words(o)
  if not w or #w == 0 then return end
  anvil().run(w[1], vim.list_slice(w, 2), {literal = vim.list_slice(literal, 2)})
end, {
  nargs = '+', desc = 'Run a plugin command: [PLUGIN:]COMMAND [ARGS...] (% = this buffer)',
  complete = function(lead, line)
    if #vim.split(line, '%s+', {trimempty = true}) > (lead == '' and 1 or 2) then return {} end
    return anvil().complete_commands(lead)
  end,
})
cmd('AnvilReload', function(o) anvil().reload(o.args) end, {
  nargs = 1, desc = 'Reload a plugin (cancel, kill its host, start a new one)',
  complete = function(lead) return anvil().complete_plugins(lead) end,
})
cmd('AnvilFormat', function(o) anvil().format(o.args) end, {
  nargs = '?', desc = "Format this buffer with a plugin's command (default: setup{format = ...})",
  complete = function(lead) return anvil().complete_commands(lead) end,
})
cmd('AnvilExec', function(o) anvil().exec(o.args) end, {
  nargs = '+', desc = 'Run a shell command line through anvil/exec: the command rules, your '
      .. 'approval (asked here), the sandbox; the result in anvil://exec',
})
cmd('AnvilCancel', function() anvil().cancel() end, {desc = 'Cancel the running commands'})
cmd('AnvilLog', function() anvil().show_log() end, {desc = "anvil serve's log"})

local group = vim.api.nvim_create_augroup('anvil', {clear = true})
vim.api.nvim_create_autocmd({'BufReadPost', 'BufNewFile', 'BufFilePost'}, {
  group = group,
  callback = function(a) anvil().on_buf_open(a.buf) end,
})
vim.api.nvim_create_autocmd({'BufUnload', 'BufFilePre'}, {
  group = group,
  callback = function(a) anvil().on_buf_close(a.buf) end,
})
-- Nothing of a session may outlive the editor: stop it (and wait) before Neovim exits.
vim.api.nvim_create_autocmd('VimLeavePre', {
  group = group,
  callback = function() anvil().stop() end,
})
