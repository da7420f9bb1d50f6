import * as hdr from 'hdr-histogram-js';

/**
 * Latency histograms in microseconds (HdrHistogram, 3 significant digits), summarised in
 * milliseconds. The pure-JS implementation: WebAssembly would need an async init for no gain here.
 */
export function newHistogram() {
  return hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 120_000_000, numberOfSignificantValueDigits: 3, useWebAssembly: false });
}

/** Records a latency given in milliseconds (fractional). */
export function recordMs(histogram, ms) {
  histogram.recordValue(Math.max(1, Math.round(ms * 1000)));
}

const round = (us) => Math.round(us) / 1000;

/**
 * @returns {{count: number, p50: number|null, p90: number|null, p99: number|null, p999: number|null, max: number|null, mean: number|null}}
 *   milliseconds, null when nothing was recorded
 */
export function summarize(histogram) {
  const count = histogram.totalCount;
  if (count === 0) return { count: 0, p50: null, p90: null, p99: null, p999: null, max: null, mean: null };
  return {
    count,
    p50: round(histogram.getValueAtPercentile(50)),
    p90: round(histogram.getValueAtPercentile(90)),
    p99: round(histogram.getValueAtPercentile(99)),
    p999: round(histogram.getValueAtPercentile(99.9)),
    max: round(histogram.maxValue),
    mean: round(histogram.mean),
  };
}
