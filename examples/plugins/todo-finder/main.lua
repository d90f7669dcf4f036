-- Finds TODO/FIXME markers with ripgrep (sys.exec: argv only, checked against Anvil's rg
-- policy, run by anvil-exec-runner in its own sandbox) and returns their locations.
--   find-todos [PATTERN]  -> { {path=, line=, text=}, ... }
anvil.command("find-todos", function(args)
  local pattern = args[1] or "TODO|FIXME"
  local r = sys.exec{program = "rg", args = {"--vimgrep", "--no-heading", "--color", "never",
                                              "--max-count", "200", "-e", pattern, "."}}
  if r.code == 1 then return {} end  -- rg: no match
  if r.code ~= 0 then error("error: rg failed: " .. r.stderr) end
  local found = {}
  for line in r.stdout:gmatch("[^\n]+") do
    local path, lnum, col, text = line:match("^(.-):(%d+):(%d+):(.*)$")
    if path then
      if path:sub(1, 2) == "./" then path = path:sub(3) end
      found[#found + 1] = {path = path, line = tonumber(lnum), column = tonumber(col),
                           text = text}
    end
  end
  editor.notify(string.format("%d markers found", #found))
  return found
end)
