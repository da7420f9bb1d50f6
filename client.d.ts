export * from '@agent-messaging/client';
