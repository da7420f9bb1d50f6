// The client library's first published import path, `agent-messaging-service/client` (docs/client.md):
// the library itself is the package @agent-messaging/client; this path re-exports it so that
// programs written against it keep working.
export * from '@agent-messaging/client';
