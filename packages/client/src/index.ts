/**
 * `agent-messaging-service/client`: the client library (docs/client.md).
 * Works in Node.js 20 and browsers: global `fetch` and `socket.io-client`, nothing of the server at
 * run time (its schemas are imported as types only).
 */
export { AmsClient, type AmsClientEvents, type AmsClientOptions, type MessageStream, type SendOptions } from './client.js';
export { AmsError } from './errors.js';
export { leaseConflicts } from './methods/leases.js';
export type { DownloadedFile, DownloadInfo, FileBody } from './files.js';
export type * from './types.js';
