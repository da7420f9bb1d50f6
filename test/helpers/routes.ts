/**
 * The routes a server registered, as `METHOD /pattern` (HEAD twins of GET left out), read from
 * Fastify's route tree (`app.http.printRoutes({ commonPrefix: false })`): tests that must cover
 * every route (fuzzing, body limits, the API documents) compare against it, so a new route cannot
 * be forgotten by them.
 */
export function registeredRoutes(tree: string): string[] {
  const routes: string[] = [];
  const stack: string[] = [];
  for (const line of tree.split('\n')) {
    const match = /^([│├└─ ]*)(\S.*?)(?: \(([^)]*)\))?$/.exec(line);
    if (!match) continue;
    const depth = match[1]!.length / 4 - 1;
    stack.length = Math.max(depth, 0);
    const path = stack.join('') + match[2]!;
    stack.push(match[2]!);
    for (const method of (match[3] ?? '').split(',').map((m) => m.trim()).filter((m) => m !== '' && m !== 'HEAD')) {
      routes.push(`${method} ${path}`);
    }
  }
  return routes;
}
