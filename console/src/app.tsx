import { useEffect, useRef, useState } from 'preact/hooks';

import { AdminView } from './views/admin.js';
import { AuditView } from './views/audit.js';
import { ConnectedAppsView } from './views/connected-apps.js';
import { DirectoryView } from './views/directory.js';
import { FeedView } from './views/feed.js';
import { RoomsView } from './views/rooms.js';
import { SignIn } from './views/sign-in.js';
import { TasksView } from './views/tasks.js';
import { describeError, type Session } from './session.js';

type View = 'rooms' | 'feed' | 'directory' | 'tasks' | 'apps' | 'admin' | 'audit';

/**
 * The console routes by the URL's hash (#/rooms/<id>, #/rooms/<id>/thread/<rootId>, #/feed, ...):
 * one page, one server URL.
 */
function parseHash(hash: string): { view: View; id?: string; thread?: string } {
  const [, view, id, part, thread] = hash.replace(/^#/, '').split('/');
  if (view === 'feed' || view === 'directory' || view === 'tasks' || view === 'apps' || view === 'admin' || view === 'audit') return { view, id };
  return { view: 'rooms', id, thread: part === 'thread' && thread !== '' ? thread : undefined };
}

function useHash(): string {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const onChange = (): void => setHash(location.hash);
    window.addEventListener('hashchange', onChange);
    return () => window.removeEventListener('hashchange', onChange);
  }, []);
  return hash;
}

const NAV: { view: View; label: string; adminOnly?: boolean }[] = [
  { view: 'rooms', label: 'Rooms' },
  { view: 'feed', label: 'Feed' },
  { view: 'directory', label: 'Directory' },
  { view: 'tasks', label: 'Tasks' },
  { view: 'apps', label: 'Connected apps' },
  { view: 'admin', label: 'Admin', adminOnly: true },
  { view: 'audit', label: 'Audit', adminOnly: true },
];

export function App() {
  const [session, setSession] = useState<Session | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  if (session === null) return <SignIn notice={notice} onSignedIn={(s) => { setNotice(null); setSession(s); }} />;
  const signOut = (reason?: string): void => {
    void session.client.close();
    setSession(null);
    setNotice(reason ?? null);
    location.hash = '';
  };
  return <Console session={session} onSignOut={signOut} />;
}

function Console({ session, onSignOut }: { session: Session; onSignOut: (reason?: string) => void }) {
  const route = parseHash(useHash());
  const [reconnecting, setReconnecting] = useState(false);
  const main = useRef<HTMLElement>(null);
  // The client reconnects and catches up by itself; the person is told while it is away.
  useEffect(() => {
    const offDown = session.client.on('disconnect', () => setReconnecting(true));
    const offUp = session.client.on('connect', () => setReconnecting(false));
    // The renewal was refused (the API token was revoked or expired): the session is over.
    const offError = session.client.on('error', (err) => { if (err.status === 401) onSignOut(describeError(err)); });
    return () => { offDown(); offUp(); offError(); };
  }, [session, onSignOut]);
  // A new view moves focus to its content, so a keyboard or screen-reader user starts there.
  useEffect(() => main.current?.focus(), [route.view]);
  const isAdmin = session.me.role === 'admin';
  const view = NAV.find((item) => item.view === route.view)?.adminOnly === true && !isAdmin ? 'rooms' : route.view;

  return (
    <div class="console">
      <a class="skip" href="#main" onClick={(e) => { e.preventDefault(); main.current?.focus(); }}>Skip to content</a>
      <header class="top">
        <span class="brand">AMS console</span>
        <nav aria-label="Main">
          <ul>
            {NAV.filter((item) => !item.adminOnly || isAdmin).map((item) => (
              <li key={item.view}>
                <a href={`#/${item.view}`} aria-current={view === item.view ? 'page' : undefined}>{item.label}</a>
              </li>
            ))}
          </ul>
        </nav>
        <div class="who">
          <span class="me" title={session.me.id}>{session.me.displayName}</span>
          <button type="button" class="secondary" onClick={() => onSignOut()}>Sign out</button>
        </div>
      </header>
      <div class="connection" role="status">
        {reconnecting ? <p class="banner">reconnecting…</p> : null}
      </div>
      <main id="main" ref={main} tabIndex={-1}>
        {view === 'rooms' && <RoomsView session={session} roomId={route.id} threadId={route.thread} />}
        {view === 'feed' && <FeedView session={session} channelId={route.id} />}
        {view === 'directory' && <DirectoryView session={session} />}
        {view === 'tasks' && <TasksView session={session} />}
        {view === 'apps' && <ConnectedAppsView session={session} />}
        {view === 'admin' && <AdminView session={session} />}
        {view === 'audit' && <AuditView session={session} />}
      </main>
    </div>
  );
}
