import type { Api } from './api.js';

/** The value of one Prometheus sample from GET /metrics, 0 when the series does not exist yet. */
export async function metricValue(api: Api, name: string, labels: Record<string, string> = {}): Promise<number> {
  const res = await api.get('/metrics');
  if (res.status !== 200 || typeof res.body !== 'string') throw new Error(`GET /metrics: ${res.status}`);
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  for (const line of res.body.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const labelText = line.slice(name.length).split(' ')[0] ?? '';
    if (wanted.every((w) => labelText.includes(w))) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return 0;
}
