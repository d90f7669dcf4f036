-- Reads src/ through sys.fs and writes a report under notes/ (its whole grant: read src/**,
-- write notes/**). Anything else it tried would be refused by the gateway.
local function walk(dir, out)
  for _, e in ipairs(sys.fs.list(dir)) do
    local path = dir .. "/" .. e.name
    if e.type == "dir" then
      walk(path, out)
    elseif e.type == "file" then
      local n = 0
      for line in sys.fs.read(path):gmatch("[^\n]*") do
        n = n + 1
        if line:find("TODO") or line:find("FIXME") then
          out[#out + 1] = string.format("- %s:%d: %s", path, n, line:gsub("^%s+", ""))
        end
      end
    end
  end
end

anvil.command("write-report", function(args)
  local lines = {}
  walk("src", lines)
  table.sort(lines)
  local text = "# TODO report\n\n" .. (#lines > 0 and table.concat(lines, "\n") or "Nothing to do.") .. "\n"
  sys.fs.write("notes/todo-report.md", text, {parents = true})
  editor.notify(string.format("wrote notes/todo-report.md (%d items)", #lines))
  return {path = "notes/todo-report.md", items = #lines}
end)
