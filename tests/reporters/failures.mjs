// A node:test reporter that prints nothing until the run ends, then one line per
// failed test (file, name, first lines of the error). scripts/test.sh runs it
// beside the TAP reporter so the end of a long CI log names what failed.
export default async function* failures(source) {
  const failed = [];
  let passed = 0;
  for await (const event of source) {
    if (event.type === "test:pass" && event.data.details?.type !== "suite") passed += 1;
    if (event.type !== "test:fail") continue;
    const { name, file, details } = event.data;
    if (details?.type === "suite") continue;
    const error = details?.error;
    const cause = error?.cause ?? error;
    const message = String(cause?.stack ?? cause?.message ?? cause ?? "")
      .split("\n")
      .slice(0, 40)
      .join("\n    ");
    failed.push(`- ${file ?? "?"}\n  ${name}\n    ${message}`);
  }
  yield `\n== node:test summary: ${passed} passed, ${failed.length} failed ==\n`;
  if (failed.length > 0) yield `${failed.join("\n")}\n`;
}
