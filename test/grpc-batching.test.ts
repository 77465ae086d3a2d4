// The gRPC Work stream batches as the HTTP lease loop does: the SDK worker's
// acknowledgements ride on its credit, and the server writes them in the
// store call of the lease that credit starts (executionAckAndLease); each
// credit asks for the worker's whole room, so a herd takes as few lease calls
// as its room allows. While a long poll waits, acks go in batches of their
// own, as an HTTP worker's do. The store calls are counted by wrapping the
// store.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { DuetimeClient, Worker } from "@duetime/sdk";
import { openEngine } from "../src/engine/engine.js";
import type { Store } from "../src/store/store.js";
import { queueJob, startTestServer, type TestServer, waitFor } from "./helpers.js";

const KEYS = [
  { key: "admin-a", tenantId: "a", role: "admin" as const },
  { key: "worker-a", tenantId: "a", role: "worker" as const },
];

/** Per pool: the store calls of the worker protocol, and what they carried. */
class Calls {
  /** Lease calls (executionLease, executionAckAndLease) that granted at least one execution. */
  granting = 0;
  /** Acknowledgements written by executionAckAndLease. */
  rodeLeases = 0;
  /** executionCompleteMany and executionFailMany calls: acknowledgements written on their own. */
  separateAcks = 0;
}

function counting(calls: Map<string, Calls>) {
  const of = (pool: unknown) => {
    const key = String(pool);
    if (!calls.has(key)) calls.set(key, new Calls());
    return calls.get(key)!;
  };
  // Acks name no pool: each is counted for the pool its execution was leased from.
  const leasedFrom = new Map<string, string>();
  const poolOfAcks = (items: { executionId: string }[]) => leasedFrom.get(items[0]?.executionId ?? "");
  return (store: Store): Store =>
    new Proxy(store, {
      get(target, key, receiver) {
        const value = Reflect.get(target, key, receiver);
        if (typeof value !== "function") return value;
        return async (...args: unknown[]) => {
          const params = args[0] as { pool?: string; items?: { executionId: string }[]; complete?: { executionId: string }[] };
          const result = await value.apply(target, args);
          if (key === "executionLease" || key === "executionAckAndLease") {
            const leased = (key === "executionLease" ? result : result.leased) as { executionId: string }[];
            for (const row of leased) leasedFrom.set(row.executionId, params.pool!);
            if (leased.length > 0) of(params.pool).granting++;
            if (key === "executionAckAndLease") of(params.pool).rodeLeases += (result.completed.length as number) + (result.failed.length as number);
          } else if (key === "executionCompleteMany" || key === "executionFailMany") {
            const pool = poolOfAcks(params.items ?? []);
            if (pool !== undefined) of(pool).separateAcks++;
          }
          return result;
        };
      },
    });
}

describe("the gRPC Work stream's store calls", () => {
  let t: TestServer;
  let admin: DuetimeClient;
  const calls = new Map<string, Calls>();
  const workers: Worker[] = [];

  before(async () => {
    t = await startTestServer({
      grpcPort: 0,
      apiKeys: KEYS,
      openEngine: (options) => openEngine({ ...options, storeWrapper: counting(calls) }),
    });
    admin = new DuetimeClient({ url: t.url, token: "admin-a", retries: 0 });
  });
  after(async () => {
    await Promise.all(workers.map((w) => w.shutdown()));
    await admin.close();
    await t.close();
  });

  const startWorker = (pool: string, options: { concurrency: number; prefetch: number; ackDelayMs?: number }) => {
    let started = 0;
    // ackDelayMs long: the worker waits for its running handlers to finish, not for a timer (no timing in the counts).
    const worker = new Worker({
      url: `grpc://${t.server.grpcAddress}`,
      transport: "grpc",
      token: "worker-a",
      pool,
      handleSignals: false,
      logger: null,
      ackDelayMs: 60_000,
      ...options,
      // Handlers that end a few ms apart, so that a worker granting credit as slots free would ask for less than its room.
      handler: async () => {
        await new Promise((resolve) => setTimeout(resolve, 1 + (started++ % 5)));
        return { ok: true };
      },
    });
    workers.push(worker);
    void worker.run();
  };

  const drained = (pool: string, timeoutMs?: number) =>
    waitFor(
      async () => {
        const stats = await admin.poolStats(pool);
        return stats.queued + stats.running === 0;
      },
      `pool ${pool} drained`,
      timeoutMs,
    );

  test("a herd: every ack rides on a lease, and each lease fills the worker's whole room", async () => {
    const jobs = 1200;
    const room = 20 + 80; // concurrency + prefetch
    for (let i = 0; i < jobs; i += 600) {
      await admin.createJobs(Array.from({ length: 600 }, () => queueJob("herd", { retry: { maxAttempts: 1 } })));
    }
    startWorker("herd", { concurrency: 20, prefetch: 80 });
    await drained("herd");
    const herd = calls.get("herd")!;
    assert.equal(herd.separateAcks, 0, "no acknowledgement was written on its own");
    assert.equal(herd.rodeLeases, jobs, "every acknowledgement was written by a lease call");
    // Credit for half the room at a time took twice as many.
    assert.ok(herd.granting <= jobs / room + 1, `${herd.granting} lease calls granted executions; the room allows ${jobs / room}`);
  });

  test("one job at a time: an ack that comes while the server long-polls is written in a batch, not held for the poll", async () => {
    // The server holds credit for the rest of the room: the worker's next credit (and its ack) waits out ackDelayMs.
    startWorker("trickle", { concurrency: 4, prefetch: 0, ackDelayMs: 20 });
    for (let i = 0; i < 10; i++) {
      await admin.createJob(queueJob("trickle", { retry: { maxAttempts: 1 } }));
      // Held for a lease, the ack would wait out the server's 20 s long poll: it is not waited for that long.
      await drained("trickle", 15_000);
    }
    const trickle = calls.get("trickle")!;
    assert.equal(trickle.separateAcks + trickle.rodeLeases, 10, "each ack written once");
  });
});
