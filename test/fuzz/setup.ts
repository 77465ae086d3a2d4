// State around the fuzz: 50 known jobs in a tenant the fuzz never calls as
// (they must read back unchanged at the end), and a few resources of the
// fuzzed tenant whose ids the cases refer to (jobs, leased executions, a key),
// so PATCH, pause, heartbeat and the rest reach real rows, not only 404s.

import { isDeepStrictEqual } from "node:util";
import { waitFor } from "../helpers.js";
import type { Refs } from "./cases.js";
import { CRONS, ZONES } from "./schema-arb.js";
import { KEYS } from "./server.js";

/** A cron job's next fire time moves on when it fires; nothing else of a job the fuzz cannot reach may change. */
const MOVING_FIELDS = ["nextRunAt", "nextRunAtLocal"];

const PLAYGROUND_POOL = "fuzz-pool";

async function call(url: string, key: string, method: string, path: string, body?: unknown): Promise<unknown> {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`setup: ${method} ${path} answered ${res.status}: ${text}`);
  return text === "" ? undefined : JSON.parse(text);
}

function knownSpec(i: number): Record<string, unknown> {
  const target =
    i % 3 === 0
      ? { type: "http", url: `https://example.invalid/known/${i}`, method: "PUT", headers: { "x-i": String(i) } }
      : { type: "queue", pool: `known-${i % 4}` };
  const schedule =
    i % 2 === 0
      ? { runAt: new Date(Date.UTC(2090 + (i % 9), i % 12, 1 + (i % 28), 9)).toISOString() }
      : { cron: CRONS[i % CRONS.length], tz: ZONES[i % ZONES.length], misfire: "skip", overlap: "forbid" };
  return {
    name: `known-${i}-\u05e9\u{1f600}`,
    target,
    payload: { i, nested: { list: [i, "x", null], text: "\u202eRTL" } },
    schedule,
    retry: { maxAttempts: 1 + (i % 5), backoffSeconds: i, maxBackoffSeconds: 100 + i },
    priority: (i % 21) - 10,
  };
}

/** Creates the 50 known jobs; returns them as the server first answered GET. */
export async function createKnownJobs(url: string): Promise<Record<string, unknown>[]> {
  const jobs: Record<string, unknown>[] = [];
  for (let i = 0; i < 50; i++) {
    const created = (await call(url, KEYS.known, "POST", "/v1/jobs", knownSpec(i))) as { jobId: string };
    jobs.push((await call(url, KEYS.known, "GET", `/v1/jobs/${created.jobId}`)) as Record<string, unknown>);
  }
  return jobs;
}

const stable = (job: Record<string, unknown>) => Object.fromEntries(Object.entries(job).filter(([k]) => !MOVING_FIELDS.includes(k)));

/** The known jobs that no longer read back as they were, each with what changed. */
export async function changedKnownJobs(url: string, before: Record<string, unknown>[]): Promise<string[]> {
  const changed: string[] = [];
  for (const job of before) {
    let now: Record<string, unknown>;
    try {
      now = (await call(url, KEYS.known, "GET", `/v1/jobs/${String(job.jobId)}`)) as Record<string, unknown>;
    } catch (err) {
      changed.push(`${String(job.jobId)}: ${(err as Error).message}`);
      continue;
    }
    if (!isDeepStrictEqual(stable(now), stable(job))) {
      const fields = Object.keys({ ...job, ...now }).filter((k) => !MOVING_FIELDS.includes(k) && !isDeepStrictEqual(now[k], job[k]));
      changed.push(`${String(job.jobId)}: ${fields.map((k) => `${k} ${JSON.stringify(job[k])} -> ${JSON.stringify(now[k])}`).join("; ")}`);
    }
  }
  return changed;
}

/** Jobs, leased executions and a key of the fuzzed tenant, by the path parameter names that take them. */
export async function createPlayground(url: string): Promise<Refs> {
  const jobIds: string[] = [];
  const specs = [
    { schedule: { runAt: "2099-01-01T00:00:00Z" } },
    { schedule: { cron: "0 9 * * *", tz: "Europe/London" } },
    { schedule: { delaySeconds: 3600 } },
    ...Array.from({ length: 4 }, () => ({ schedule: { delaySeconds: 0 } })),
  ];
  for (const [i, extra] of specs.entries()) {
    const job = (await call(url, KEYS.admin, "POST", "/v1/jobs", {
      name: `play-${i}`,
      target: { type: "queue", pool: PLAYGROUND_POOL },
      ...extra,
    })) as { jobId: string };
    jobIds.push(job.jobId);
  }
  const executionIds: string[] = [];
  await waitFor(async () => {
    const lease = (await call(url, KEYS.admin, "POST", `/v1/pools/${PLAYGROUND_POOL}/lease`, { workerId: "fuzz", max: 4, leaseSeconds: 3600 })) as {
      items: Array<{ executionId: string }>;
    };
    executionIds.push(...lease.items.map((item) => item.executionId));
    return executionIds.length >= 4;
  }, "four playground executions leased");
  const key = (await call(url, KEYS.admin, "POST", "/v1/keys", { role: "worker", name: "fuzz" })) as { keyId: string };
  return { jobId: jobIds, executionId: executionIds, keyId: [key.keyId], pool: [PLAYGROUND_POOL] };
}
