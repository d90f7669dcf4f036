-- Command-line words for :AnvilRun and :AnvilFormat, split the way a shell splits words (no
-- expansion): blanks separate, "..." and '...' group, a backslash outside single quotes takes
-- the next character as it is. `:AnvilRun cmd "a b"` passes one argument, a b.
local M = {}

-- Returns the words and, for each, whether any of it was quoted or escaped (a quoted "%" is a
-- percent sign, not the current buffer); or nil and why.
function M.split(line)
  local words, literal = {}, {}
  local word, in_word, quoted = {}, false, false
  local i, n = 1, #line
  local function flush()
    if in_word then
      words[#words + 1] = table.concat(word)
      literal[#words] = quoted
    end
    word, in_word, quoted = {}, false, false
  end
  while i <= n do
    local c = line:sub(i, i)
    if c == ' ' or c == '\t' then
      flush()
    elseif c == '\\' then
      if i == n then return nil, 'a backslash ends the line: nothing to escape' end
      i = i + 1
      word[#word + 1] = line:sub(i, i)
      in_word, quoted = true, true
    elseif c == "'" then
      local close = line:find("'", i + 1, true)
      if not close then return nil, 'unterminated single quote' end
      word[#word + 1] = line:sub(i + 1, close - 1)
      in_word, quoted = true, true
      i = close
    elseif c == '"' then
      in_word, quoted = true, true
      i = i + 1
      while true do
        if i > n then return nil, 'unterminated double quote' end
        local d = line:sub(i, i)
        if d == '"' then break end
        if d == '\\' and i < n and line:sub(i + 1, i + 1):match('["\\]') then
          i = i + 1
          d = line:sub(i, i)
        end
        word[#word + 1] = d
        i = i + 1
      end
    else
      word[#word + 1] = c
      in_word = true
    end
    i = i + 1
  end
  flush()
  return words, literal
end

return M
