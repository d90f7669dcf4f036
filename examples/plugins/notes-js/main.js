// Writes a report of the sources under notes/ — it may read src/ and write notes/, nothing else.
anvil.command("report", (args) => {
  const lines = ["# Sources", ""];
  for (const e of sys.fs.list("src")) {
    if (e.type !== "file") continue;
    const st = sys.fs.stat("src/" + e.name);
    lines.push(`- src/${e.name}: ${st.size} bytes`);
  }
  sys.fs.write("notes/report.md", lines.join("\n") + "\n");
  editor.notify("report written to notes/report.md");
  return {written: "notes/report.md", entries: lines.length - 2};
});
