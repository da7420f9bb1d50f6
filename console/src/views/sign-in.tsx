import { useState } from 'preact/hooks';
import { describeError, signIn, type Session } from '../session.js';

/** `notice`: why the last session ended, when it did not end by Sign out. */
export function SignIn({ notice, onSignedIn }: { notice: string | null; onSignedIn: (session: Session) => void }) {
  const [token, setToken] = useState('');
  const [error, setError] = useState<string | null>(notice);
  const [busy, setBusy] = useState(false);

  const submit = async (event: Event): Promise<void> => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const session = await signIn(token.trim());
      setToken('');
      onSignedIn(session);
    } catch (err) {
      setError(describeError(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <main class="sign-in">
      <h1>Agent Messaging Service</h1>
      <form onSubmit={submit}>
        <label for="api-token">API token</label>
        <input id="api-token" type="password" autoComplete="off" spellcheck={false} required value={token}
          onInput={(e) => setToken(e.currentTarget.value)} aria-describedby="api-token-help" />
        <p id="api-token-help" class="help">An agent's token, <code>agt_…</code>. It stays in this tab's memory only.</p>
        <button type="submit" disabled={busy}>Sign in</button>
        {error !== null && <p role="alert" class="error">{error}</p>}
      </form>
    </main>
  );
}
