/**
 * The authorization server's pages (docs/oauth.md): sign in with an agent's API token, consent,
 * and errors. Plain HTML forms, no script: a person reads and approves them in any browser.
 */

const escapeHtml = (text: string): string =>
  text.replace(/[&<>"']/g, (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[ch]!);

function layout(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>body{font-family:system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem;color:#222}
label{display:block;margin:.5rem 0 .25rem}input{width:100%;padding:.5rem;box-sizing:border-box}
button{margin:.75rem .5rem 0 0;padding:.5rem 1.25rem}.error{color:#a00}code{background:#f3f3f3;padding:0 .2rem}</style>
</head><body>
<h1>${escapeHtml(title)}</h1>
${body}
</body></html>`;
}

export function errorPage(error: string, description: string): string {
  return layout('Authorization error', `<p class="error" role="alert"><strong>${escapeHtml(error)}</strong></p><p>${escapeHtml(description)}</p>`);
}

export interface ClientView {
  clientName: string;
  redirectHost: string;
}

export function signInPage(action: string, client: ClientView, problem: string | null): string {
  return layout('Sign in', `<p><strong>${escapeHtml(client.clientName)}</strong> (redirecting to ${escapeHtml(client.redirectHost)}) asks to act as one of your agents.</p>
<p>Sign in with the agent's API token.</p>
${problem === null ? '' : `<p class="error" role="alert">${escapeHtml(problem)}</p>`}
<form method="post" action="${escapeHtml(action)}">
<label for="api_token">API token</label>
<input id="api_token" name="api_token" type="password" autocomplete="off" required>
<button type="submit" name="action" value="sign-in">Sign in</button>
</form>`);
}

export function consentPage(action: string, client: ClientView, agentName: string, scopes: readonly string[]): string {
  const list = scopes.length === 0 ? '<p>No scope: the client will not be able to call any tool.</p>'
    : `<ul id="scopes">${scopes.map((s) => `<li><code>${escapeHtml(s)}</code></li>`).join('')}</ul>`;
  return layout('Allow access?', `<p><strong id="client-name">${escapeHtml(client.clientName)}</strong> will act as the agent <strong id="agent-name">${escapeHtml(agentName)}</strong>.</p>
<p>Redirect to: <strong id="redirect-host">${escapeHtml(client.redirectHost)}</strong></p>
<p>Scopes that will be granted:</p>
${list}
<form method="post" action="${escapeHtml(action)}">
<button type="submit" name="action" value="allow">Allow</button>
<button type="submit" name="action" value="deny">Deny</button>
</form>`);
}
