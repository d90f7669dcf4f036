-- Counts the files of the workspace and the TODO markers in its sources, through sys.fs only.
local util = require("lib.walk")

anvil.command("summary", function(args)
  local files, todos = 0, 0
  util.walk(".", function(path)
    files = files + 1
    local ok, text = pcall(sys.fs.read, path)
    if ok then
      for _ in text:gmatch("TODO") do todos = todos + 1 end
    end
  end)
  return string.format("%d files, %d TODO markers", files, todos)
end)
