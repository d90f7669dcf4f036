-- A plugin for tests/editors: each command exercises one thing an editor client must get right.

-- slow-edit TARGET: takes a snapshot of the buffer, says so, then "computes" until the user
-- has typed (the buffer's version moved on), and only then submits an edit against the old
-- snapshot. The edit must be refused as stale. Waiting for the change instead of for a fixed
-- time keeps the test deterministic; the deadline only bounds a broken run.
anvil.command("slow-edit", function(args)
  local b = editor.buffer.get(args[1])
  editor.notify("snapshot of version " .. b.version)
  local deadline = os.time() + 100
  while editor.buffer.get(args[1]).version == b.version and os.time() < deadline do end
  editor.buffer.edit(b.uri, b.version, {{text = "PLUGIN EDIT\n"}})
  return {applied = true, version = b.version}
end)

-- noisy: a notification full of terminal escape sequences, controls and a bidi override.
anvil.command("noisy", function()
  editor.notify("\27[31mred\27[0m alert\27]0;title\7 \27[2Jdone\r\nnext\226\128\174 line\0\8!")
  return "noisy done"
end)

-- peek TARGET: what the plugin sees of an open buffer.
anvil.command("peek", function(args)
  return editor.buffer.get(args[1])
end)

-- args ...: the arguments exactly as they arrived (one per word the user meant).
anvil.command("args", function(args)
  return {args = args}
end)

-- shout TARGET: edits the buffer (upper-cases its first line) and also returns a string; the
-- edit is the output, so the client must not open a window for the string.
anvil.command("shout", function(args)
  local b = editor.buffer.get(args[1])
  local first = b.text:match("^[^\n]*")
  editor.buffer.edit(b.uri, b.version, {{
    range = {start = {line = 0, character = 0}, ["end"] = {line = 0, character = #first}},
    text = first:upper()}})
  return "shouted"
end)

-- fail: a runtime error two calls deep, for the client's error location (quickfix, :AnvilLog).
local function deep(t)
  return t.missing.field
end
anvil.command("fail", function()
  local value = deep({})
  return value
end)
