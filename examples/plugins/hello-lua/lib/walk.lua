local M = {}

-- Calls fn(path) for every regular file beneath dir (workspace-relative), depth-first.
function M.walk(dir, fn)
  for _, e in ipairs(sys.fs.list(dir)) do
    local path = dir == "." and e.name or (dir .. "/" .. e.name)
    if e.type == "dir" and e.name ~= ".git" then
      M.walk(path, fn)
    elseif e.type == "file" then
      fn(path)
    end
  end
end

return M
