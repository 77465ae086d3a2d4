// The start-lag percentiles of GET /v1/stats/history, from the histogram
// buckets of workload_minutes (LAG_BOUNDS_MS).

import assert from "node:assert/strict";
import { test } from "node:test";
import { LAG_BOUNDS_MS, LAG_COLUMNS, lagBucket } from "../store/workload-minutes.js";
import { percentile } from "./stats.js";

const histogram = (counts: Record<number, number>): number[] => LAG_COLUMNS.map((_, i) => counts[i] ?? 0);

test("a lag falls in the first bucket whose bound it does not exceed; past the last bound, the open bucket", () => {
  assert.deepEqual([0, 10, 11, 25, 999, 1000, 60_000, 60_001].map(lagBucket), [0, 0, 1, 1, 6, 6, 10, 11]);
});

test("percentiles interpolate within their bucket, as histogram_quantile does; none for no attempts", () => {
  assert.equal(percentile(histogram({}), 0.5), null);
  // 10 lags in (0, 10]: the median is half way.
  assert.equal(percentile(histogram({ 0: 10 }), 0.5), 5);
  // 90 in (0, 10], 10 in (100, 250]: p50 in the first, p99 nine tenths into the fourth bucket's 150 ms.
  const h = histogram({ 0: 90, 4: 10 });
  assert.equal(percentile(h, 0.5), 50 / 9);
  assert.equal(percentile(h, 0.99), 100 + 150 * 0.9);
  assert.equal(percentile(h, 0.9), 10, "the rank that ends a bucket is its upper bound");
  // The open bucket answers the last bound: the lag is at least that.
  assert.equal(percentile(histogram({ 11: 3 }), 0.5), LAG_BOUNDS_MS[LAG_BOUNDS_MS.length - 1]);
});
