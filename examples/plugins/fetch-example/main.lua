-- sys.net.fetch example:  anvil run --approve examples/plugins/fetch-example get [URL]
-- Prints the status, the content type and the first line of the body. Redirects are not
-- followed (a 3xx is shown as it is); errors start with a stable code ("denied: ...").
anvil.command("get", function(args)
  local url = args[1] or "https://example.com/"
  local ok, r = pcall(sys.net.fetch, {url = url, headers = {Accept = "text/plain"}})
  if not ok then return "fetch failed: " .. tostring(r) end
  local first = (r.body:match("[^\n]*") or ""):sub(1, 200)
  return string.format("%d %s %s", r.status, r.headers["content-type"] or "-", first)
end)
