// Formats an open editor buffer. It never touches files: it reads the buffer snapshot
// {uri, version, text} and submits one edit against that version. If the user typed in
// between, the edit is refused with "stale: ..." (never merged) and the plugin says so.
//   format PATH_OR_URI  -> {changed, version}
function format(text) {
  const lines = text.split("\n").map((l) => l.replace(/\t/g, "    ").replace(/[ \r]+$/, ""));
  while (lines.length > 1 && lines[lines.length - 1] === "") lines.pop();
  return lines.join("\n") + "\n";
}

anvil.command("format", (args) => {
  const target = args[0];
  if (typeof target !== "string") throw new Error("invalid: format needs a buffer path or uri");
  const b = editor.buffer.get(target);
  const formatted = format(b.text);
  if (formatted === b.text) return {changed: false, version: b.version};
  try {
    editor.buffer.edit(b.uri, b.version, [{text: formatted}]);
  } catch (e) {
    if (String(e.message).startsWith("stale:")) {
      editor.notify("the buffer changed while formatting; run format again");
    }
    throw e;
  }
  return {changed: true, version: b.version};
});
