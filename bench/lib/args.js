/** The value of `--name=value` on the command line, or `fallback` when it is absent. */
export function arg(name, fallback) {
  const found = process.argv.find((a) => a.startsWith(`--${name}=`));
  return found === undefined ? fallback : found.slice(name.length + 3);
}
