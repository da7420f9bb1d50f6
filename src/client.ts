/**
 * `agent-messaging-service/client`: the client library's first published import path, kept for the
 * programs written against it (docs/client.md, Install). The library is the package
 * `@agent-messaging/client`; this re-exports all of it, so both names give the same classes.
 */
export * from '@agent-messaging/client';
