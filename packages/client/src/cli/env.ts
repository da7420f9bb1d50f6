/** Where the `ams` client commands find the service (`--url`, `--token` win over these). */
export interface ClientEnv {
  AMS_URL?: string;
  AMS_API_TOKEN?: string;
  /** The deployment's company id, for the directory (default "default"). */
  COMPANY_ID?: string;
}

/** The client's environment: an empty variable means "not set". */
export function readClientEnv(source: NodeJS.ProcessEnv = process.env): ClientEnv {
  const env: ClientEnv = {};
  for (const key of ['AMS_URL', 'AMS_API_TOKEN', 'COMPANY_ID'] as const) {
    const value = source[key];
    if (value !== undefined && value !== '') env[key] = value;
  }
  return env;
}
