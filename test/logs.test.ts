// End to end: the log (engine/event-log.ts). A real server on loopback writes
// its JSON lines to a captured stream while a job succeeds, one fails into
// the dead letters (after a retry) and one loses its lease; the lines carry
// their levels and ids, nodeId on every one, and never a payload, an API key
// or a signing secret. Embedded mode logs the same lines to the logger it is
// given.

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { DuetimeClient } from "@duetime/sdk";
import { pino } from "pino";
import { createDuetime } from "../src/embedded/index.js";
import { parseApiKeys, startServer } from "../src/server/index.js";
import { apiError, queueJob, testStore, waitFor } from "./helpers.js";

const PAYLOAD_MARKER = "payload-marker-5c1e9b";
const TOKEN = "log-test-admin-key-93b7";
const SIGNING_SECRET = "whsec_log-test-secret-0d4f";

interface Line {
  level: number;
  msg: string;
  nodeId?: string;
  [field: string]: unknown;
}

const LEVEL = { debug: 20, info: 30, warn: 40, error: 50 } as const;

/** A pino destination that keeps every line, raw and parsed. */
function capture() {
  const raw: string[] = [];
  return {
    stream: { write: (line: string) => void raw.push(line) },
    raw,
    lines: (): Line[] => raw.map((l) => JSON.parse(l) as Line),
  };
}

/** The one line with this message and these fields; fails listing what was logged. */
function one(lines: Line[], msg: string, fields: Record<string, unknown>): Line {
  const found = lines.filter((l) => l.msg === msg && Object.entries(fields).every(([k, v]) => l[k] === v));
  assert.equal(
    found.length,
    1,
    `one "${msg}" line with ${JSON.stringify(fields)}; got ${found.length} in:\n${lines.map((l) => JSON.stringify(l)).join("\n")}`,
  );
  return found[0]!;
}

test("the server logs each lifecycle event once, at its level, with its ids and nodeId, and never a payload or a credential", {
  timeout: 90_000,
}, async () => {
  const dir = mkdtempSync(join(tmpdir(), "duetime-logs-"));
  const store = testStore(dir);
  const log = capture();
  const server = await startServer({
    host: "127.0.0.1",
    port: 0,
    store: store.url,
    storeOptions: store.options,
    nodeId: "log-node-1",
    logLevel: "debug",
    logStream: log.stream,
    apiKeys: parseApiKeys(`${TOKEN}:acme:admin`),
    signingSecret: SIGNING_SECRET,
  });
  const client = new DuetimeClient({ url: server.url, token: TOKEN, retries: 0 });
  const payload = { secret: PAYLOAD_MARKER };
  const ok = await client.createJob(queueJob("logs-ok", { payload }));
  const dead = await client.createJob(queueJob("logs-dead", { payload, retry: { maxAttempts: 2, backoffSeconds: 0 } }));
  const lost = await client.createJob(queueJob("logs-lost", { payload }));
  try {
    // A success.
    const [a] = await waitFor(async () => (await client.lease("logs-ok", { workerId: "w", max: 1 })).items, "ok leased");
    await client.complete(a!.executionId, a!.attempt, { echoed: PAYLOAD_MARKER });

    // A failure that is retried, then a second one that dead-letters it.
    for (const attempt of [1, 2]) {
      const [d] = await waitFor(async () => (await client.lease("logs-dead", { workerId: "w", max: 1 })).items, `dead attempt ${attempt} leased`);
      assert.equal(d!.attempt, attempt);
      await client.fail(d!.executionId, d!.attempt, { message: `boom ${PAYLOAD_MARKER}`, class: "transient" });
    }

    // A lease that expires (the reaper ends the attempt), then the late worker's complete: LEASE_LOST.
    const [l] = await waitFor(async () => (await client.lease("logs-lost", { workerId: "slow", max: 1, leaseSeconds: 1 })).items, "lost leased");
    await waitFor(() => log.lines().some((x) => x.msg.startsWith("lease expired") && x.jobId === lost.jobId), "the reaper ended the attempt");
    // Another worker takes the execution over, then the slow one shows up: LEASE_LOST, and a possible duplicate.
    const [again] = await waitFor(async () => (await client.lease("logs-lost", { workerId: "fast", max: 1 })).items, "lost leased again");
    assert.equal(again!.attempt, 2);
    assert.equal((await apiError(client.heartbeat(l!.executionId, { attempt: 1 }))).code, "LEASE_LOST");
    assert.equal((await apiError(client.complete(l!.executionId, 1, { late: PAYLOAD_MARKER }))).code, "LEASE_LOST");
    await client.complete(again!.executionId, 2);

    // A refused credential is answered, not logged.
    const stranger = new DuetimeClient({ url: server.url, token: `${TOKEN}-wrong`, retries: 0 });
    assert.equal((await apiError(stranger.getJob(ok.jobId))).code, "UNAUTHENTICATED");
    await stranger.close();
    // Should anything log a request's headers, the credentials are redacted.
    server.app.log.warn({ req: { headers: { authorization: `Bearer ${TOKEN}` } }, headers: { authorization: `Bearer ${TOKEN}` } }, "headers");
  } finally {
    await client.close();
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }

  const lines = log.lines();
  for (const line of lines) assert.equal(line.nodeId, "log-node-1", `nodeId on every line: ${JSON.stringify(line)}`);
  const all = log.raw.join("");
  assert.ok(!all.includes(PAYLOAD_MARKER), "no payload, result or worker error text in the log");
  assert.ok(!all.includes(TOKEN), "no API key in the log");
  assert.ok(!all.includes(SIGNING_SECRET), "no signing secret in the log");
  assert.match(all, /\[Redacted\]/);

  // The node's own life: info.
  assert.equal(one(lines, "duetime listening", {}).level, LEVEL.info);
  const shards = one(lines, "shards changed", { gained: 256 });
  assert.equal(shards.level, LEVEL.info);
  assert.equal(shards.owned, 256);
  assert.equal(one(lines, "duetime stopped", {}).level, LEVEL.info);

  // The success: leased and succeeded at debug, with every id.
  const ids = (jobId: string) => ({ jobId, tenantId: "acme" });
  const leased = one(lines, "attempt leased", { ...ids(ok.jobId), pool: "logs-ok" });
  assert.equal(leased.level, LEVEL.debug);
  assert.equal(leased.attempt, 1);
  assert.match(String(leased.executionId), new RegExp(`^${ok.jobId}-`));
  const succeeded = one(lines, "attempt succeeded", ids(ok.jobId));
  assert.equal(succeeded.level, LEVEL.debug);
  assert.equal(succeeded.executionId, leased.executionId);
  assert.equal(succeeded.attempt, 1);

  // The dead letter: a retried failure at debug, then the dead letter at warn.
  const retried = one(lines, "attempt failed; it will be retried", { ...ids(dead.jobId), attempt: 1 });
  assert.equal(retried.level, LEVEL.debug);
  assert.equal(retried.pool, "logs-dead");
  assert.equal(retried.state, "READY");
  const deadLine = one(lines, "execution dead-lettered: its attempt failed for good", { ...ids(dead.jobId), attempt: 2 });
  assert.equal(deadLine.level, LEVEL.warn);
  assert.equal(deadLine.pool, "logs-dead");
  assert.equal(deadLine.executionId, retried.executionId);
  assert.equal(one(lines, "attempt leased", { ...ids(dead.jobId), attempt: 2 }).retry, true);

  // The lost lease: the reaper's timeout, the refused call and the possible duplicate, at warn.
  const expired = one(lines, "lease expired: the attempt timed out; it will be retried", { ...ids(lost.jobId), pool: "logs-lost" });
  assert.equal(expired.level, LEVEL.warn);
  const refused = one(lines, "lease lost: the attempt's call was refused (LEASE_LOST)", { jobId: lost.jobId, attempt: 1, call: "complete" });
  assert.equal(refused.level, LEVEL.warn);
  assert.equal(refused.executionId, expired.executionId);
  // A worker's heartbeat refused over HTTP is told too (so is duetime_lease_lost_total).
  assert.equal(
    one(lines, "lease lost: the attempt's call was refused (LEASE_LOST)", { jobId: lost.jobId, attempt: 1, call: "heartbeat" }).level,
    LEVEL.warn,
  );
  const duplicate = one(lines, "possible duplicate: the attempt may have run twice", { ...ids(lost.jobId), attempt: 1, reason: "lease_lost" });
  assert.equal(duplicate.level, LEVEL.warn);

  // Nothing went wrong inside: no error line.
  assert.deepEqual(
    lines.filter((l) => l.level >= LEVEL.error),
    [],
  );
});

test("embedded mode logs the engine's events to the logger it is given, with nodeId", { timeout: 60_000 }, async () => {
  const log = capture();
  const duetime = await createDuetime({
    store: "sqlite::memory:",
    nodeId: "embedded-log-1",
    logger: pino({ level: "debug" }, log.stream),
  });
  let jobId = "";
  try {
    const job = await duetime.client.createJob(queueJob("embedded-logs", { payload: { secret: PAYLOAD_MARKER } }));
    jobId = job.jobId;
    const worker = duetime.worker({ pool: "embedded-logs", handler: async () => ({ ok: true }) });
    void worker.run();
    await waitFor(() => log.lines().some((l) => l.msg === "attempt succeeded"), "the job ran");
  } finally {
    await duetime.stop();
  }
  const lines = log.lines();
  for (const line of lines) assert.equal(line.nodeId, "embedded-log-1");
  assert.ok(!log.raw.join("").includes(PAYLOAD_MARKER));
  assert.equal(one(lines, "duetime embedded engine started", {}).level, LEVEL.info);
  assert.equal(one(lines, "attempt succeeded", { jobId, attempt: 1 }).level, LEVEL.debug);
  assert.equal(one(lines, "duetime embedded engine stopped", {}).level, LEVEL.info);
});
