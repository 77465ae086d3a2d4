import assert from "node:assert/strict";
import { EventEmitter, once } from "node:events";
import { after, describe, test } from "node:test";
import type { LeasedExecution } from "./api.js";
import { AttemptAbortedError, NonRetryableError, ThrottledError } from "./errors.js";
import type { WorkerEvent } from "./events.js";
import { FakePool } from "./testing/fake-pool.js";
import { serveApi, type TestServer } from "./testing/http-server.js";
import { Worker, type WorkerOptions } from "./worker.js";

const servers: TestServer[] = [];
after(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

/** Collects a worker's events and lets a test wait for one (never sleeping blindly). */
class EventLog {
  readonly list: WorkerEvent[] = [];
  private readonly emitter = new EventEmitter();
  readonly push = (e: WorkerEvent): void => {
    this.list.push(e);
    this.emitter.emit("event", e);
  };
  of<T extends WorkerEvent["type"]>(type: T): Extract<WorkerEvent, { type: T }>[] {
    return this.list.filter((e): e is Extract<WorkerEvent, { type: T }> => e.type === type);
  }
  async until(pred: () => boolean, what: string, timeoutMs = 15_000): Promise<void> {
    const signal = AbortSignal.timeout(timeoutMs);
    while (!pred()) {
      try {
        await once(this.emitter, "event", { signal });
      } catch {
        throw new Error(`timed out waiting for ${what}`);
      }
    }
  }
}

type Mode = "http" | "api";

/** A worker over the fake pool, through a real HTTP server (mode "http") or in-process (mode "api"). */
async function setup(mode: Mode, options: Omit<WorkerOptions, "url" | "api" | "pool">) {
  const fake = new FakePool();
  const log = new EventLog();
  let conn: Pick<WorkerOptions, "url" | "api" | "client">;
  if (mode === "http") {
    const server = await serveApi(fake);
    servers.push(server);
    conn = { url: server.url, client: { retryBaseMs: 20, retryMaxMs: 100 } };
  } else {
    conn = { api: fake };
  }
  const worker = new Worker({ ...conn, pool: "p", logger: null, handleSignals: false, onEvent: log.push, ...options });
  return { fake, log, worker };
}

/** Requests that carried acknowledgements, whichever route they took. */
function ackRequests(fake: FakePool): number {
  const onLease = fake.leaseRequests.filter((r) => (r.complete?.length ?? 0) + (r.fail?.length ?? 0) > 0).length;
  return onLease + (fake.calls.completeMany ?? 0) + (fake.calls.failMany ?? 0) + (fake.calls.complete ?? 0) + (fake.calls.fail ?? 0);
}

function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

for (const mode of ["http", "api"] as const) {
  describe(`Worker (${mode})`, () => {
    test("runs 200 jobs within its concurrency and acknowledges them in batches", async () => {
      let running = 0;
      let peak = 0;
      const { fake, worker } = await setup(mode, {
        concurrency: 25,
        handler: async (job) => {
          running++;
          peak = Math.max(peak, running);
          await new Promise((resolve) => setTimeout(resolve, Math.random() * 5));
          running--;
          return { doubled: (job.payload as number) * 2 };
        },
      });
      fake.add(
        "p",
        Array.from({ length: 200 }, (_, i) => i),
      );
      const done = worker.run();
      await fake.waitFor(() => fake.count("SUCCEEDED") === 200, "200 completions");
      await worker.shutdown();
      await done;
      assert.ok(peak <= 25, `peak concurrency ${peak}`);
      assert.ok(peak > 1, "jobs ran concurrently");
      for (const e of fake.executions.values()) assert.deepEqual(e.result, { doubled: (e.payload as number) * 2 });
      const acks = ackRequests(fake);
      assert.ok(acks <= 20, `200 jobs acknowledged in ${acks} requests`);
      // Free slots plus at most 4 × concurrency of "auto" prefetch.
      assert.ok(fake.leaseRequests.every((r) => (r.max ?? 1) <= 125 && (r.waitSeconds === 20 || r.waitSeconds === 0) && r.leaseSeconds === 30));
      assert.equal(worker.state, "stopped");
    });

    test("heartbeats and acks carry the token of the lease that granted the attempt", async () => {
      const { fake, worker } = await setup(mode, {
        handler: async (job, ctx) => {
          await ctx.heartbeat();
          if (job.payload === "fail") throw new Error("no");
        },
      });
      const ids = fake.add("p", ["ok", "fail"]);
      void worker.run();
      await fake.waitFor(() => fake.count("SUCCEEDED") === 1 && fake.count("FAILED") === 1, "both acknowledged");
      await worker.shutdown();
      for (const id of ids) {
        const e = fake.executions.get(id)!;
        assert.match(e.leaseToken ?? "", /^g\d+$/);
        assert.equal(e.finishedToken, e.leaseToken, `${id}'s ack carried its token`);
        assert.deepEqual(
          fake.heartbeats.filter((h) => h.executionId === id).map((h) => h.leaseToken),
          [e.leaseToken],
        );
      }
    });

    test("a thrown error fails the attempt with its class", async () => {
      const { fake, log, worker } = await setup(mode, {
        handler: async (job) => {
          switch (job.payload) {
            case "transient":
              throw new Error("flaky");
            case "permanent":
              throw new NonRetryableError("never");
            case "throttled":
              throw new ThrottledError("slow down", 5);
            default:
              return { big: 1n };
          }
        },
      });
      const [transient, permanent, throttled, unserialisable] = fake.add("p", ["transient", "permanent", "throttled", "bigint"]);
      void worker.run();
      await fake.waitFor(() => fake.count("FAILED") === 2 && fake.count("DEAD") === 2, "four failures");
      await worker.shutdown();
      assert.deepEqual(fake.executions.get(transient!)!.error, { message: "flaky", class: "transient" });
      assert.deepEqual(fake.executions.get(permanent!)!.error, { message: "never", class: "permanent", name: "NonRetryableError" });
      assert.deepEqual(fake.executions.get(throttled!)!.error, {
        message: "slow down",
        class: "throttled",
        retryAfterSeconds: 5,
        name: "ThrottledError",
      });
      assert.equal(fake.executions.get(unserialisable!)!.error?.class, "permanent");
      assert.equal(log.of("job:fail").length, 4);
    });

    test("a 409 LEASE_LOST on heartbeat aborts the handler's signal and drops its result", async () => {
      let seen: unknown;
      const { fake, log, worker } = await setup(mode, {
        leaseSeconds: 1,
        handler: async (_job, ctx) => {
          if (!ctx.signal.aborted) await once(ctx.signal, "abort");
          seen = ctx.signal.reason;
          return "too late";
        },
      });
      const [id] = fake.add("p", [1]);
      void worker.run();
      await log.until(() => log.of("job:start").length === 1, "job:start");
      fake.loseLease(id!);
      await log.until(() => log.of("job:drop").length === 1, "job:drop");
      assert.ok(seen instanceof AttemptAbortedError);
      assert.equal(seen.reason, "lease_lost");
      assert.deepEqual(
        log.of("lease:lost").map((e) => e.during),
        ["heartbeat"],
      );
      await worker.shutdown();
      assert.equal(fake.executions.get(id!)!.state, "RUNNING", "the dropped result was not acknowledged");
      assert.equal(ackRequests(fake), 0);
    });

    test("cancelRequested on heartbeat aborts the handler's signal", async () => {
      let seen: unknown;
      const { fake, log, worker } = await setup(mode, {
        leaseSeconds: 1,
        handler: async (_job, ctx) => {
          await ctx.heartbeat(); // explicit heartbeat works while the attempt is live
          if (!ctx.signal.aborted) await once(ctx.signal, "abort");
          seen = ctx.signal.reason;
          await assert.rejects(ctx.heartbeat(), AttemptAbortedError);
        },
      });
      const [id] = fake.add("p", [1]);
      void worker.run();
      await fake.waitFor(() => fake.heartbeats.length >= 1, "a heartbeat");
      fake.requestCancel(id!);
      await log.until(() => log.of("job:drop").length === 1, "job:drop");
      assert.equal((seen as AttemptAbortedError).reason, "cancelled");
      assert.equal(log.of("job:cancel").length, 1);
      await worker.shutdown();
      assert.equal(fake.executions.get(id!)!.state, "RUNNING");
    });

    test("shutdown stops leasing, lets running handlers finish, then flushes their acks", async () => {
      const release = gate();
      const { fake, log, worker } = await setup(mode, {
        concurrency: 8,
        handler: async (job) => {
          await release.promise;
          return job.payload;
        },
      });
      fake.add("p", [1, 2, 3, 4, 5]);
      const done = worker.run();
      await log.until(() => log.of("job:start").length === 5, "five starts");
      await fake.waitFor(() => fake.leaseRequests.length === 2, "the long poll for the free slots");
      const started = performance.now();
      let stopped = false;
      const stopping = worker.shutdown().then(() => (stopped = true));
      await log.until(() => worker.state === "stopping", "stopping");
      // The long poll was aborted; once the server has noticed, nothing more is leased.
      await fake.waitFor(() => fake.activeLeases === 0, "the long poll to end");
      fake.add("p", [6]);
      for (let i = 0; i < 20; i++) await new Promise(setImmediate);
      assert.equal(stopped, false, "shutdown waits for running handlers");
      assert.equal(fake.count("SUCCEEDED"), 0);
      release.open();
      await stopping;
      await done;
      assert.ok(performance.now() - started < 5_000, "the long poll was cut short");
      assert.equal(fake.count("SUCCEEDED"), 5, "acks flushed before shutdown resolved");
      assert.equal(fake.count("QUEUED"), 1);
      assert.equal(worker.state, "stopped");
      assert.deepEqual(
        log.of("state").map((e) => e.state),
        ["running", "stopping", "stopped"],
      );
    });

    test("acks go through completeMany while a long poll is in flight", async () => {
      const release = gate();
      const { fake, log, worker } = await setup(mode, { concurrency: 2, handler: async () => release.promise });
      const [id] = fake.add("p", [1]);
      void worker.run();
      await fake.waitFor(() => fake.leaseRequests.length === 2, "the second lease (long poll)");
      release.open();
      await log.until(() => log.of("acks:sent").length === 1, "acks:sent");
      assert.equal(fake.executions.get(id!)!.state, "SUCCEEDED");
      assert.equal(fake.calls.completeMany, 1);
      assert.equal(fake.leaseRequests.length, 2, "no lease call was needed to acknowledge");
      assert.deepEqual(
        log.of("acks:sent").map((e) => [e.via, e.count]),
        [["batch", 1]],
      );
      await worker.shutdown();
    });
  });
}

describe("Worker: prefetch", () => {
  test('"auto" asks for the free slots until a handler has finished, then holds more for fast handlers, up to 4 × concurrency', async () => {
    let running = 0;
    let peak = 0;
    const { fake, worker } = await setup("api", {
      concurrency: 10,
      handler: async () => {
        peak = Math.max(peak, ++running);
        await new Promise(setImmediate);
        running--;
      },
    });
    fake.add(
      "p",
      Array.from({ length: 1_000 }, (_, i) => i),
    );
    void worker.run();
    await fake.waitFor(() => fake.count("SUCCEEDED") === 1_000, "1,000 completions");
    await worker.shutdown();
    const asked = fake.leaseRequests.map((r) => r.max ?? 1);
    assert.equal(asked[0], 10, "nothing is known of the handlers yet");
    assert.ok(Math.max(...asked) > 10, `later leases prefetch (asked ${asked.join(",")})`);
    assert.ok(Math.max(...asked) <= 50, `at most free slots + 4 × concurrency (asked ${asked.join(",")})`);
    assert.ok(peak <= 10, `prefetched work waits for a slot (peak ${peak})`);
  });

  test('"auto" holds nothing beyond the slots for handlers slower than its horizon', async () => {
    const { fake, worker } = await setup("api", {
      concurrency: 1,
      handler: () => new Promise((resolve) => setTimeout(resolve, 150)),
    });
    fake.add("p", [1, 2, 3, 4]);
    void worker.run();
    await fake.waitFor(() => fake.count("SUCCEEDED") === 4, "four completions");
    await worker.shutdown();
    assert.deepEqual(
      fake.leaseRequests.map((r) => r.max),
      fake.leaseRequests.map(() => 1),
    );
  });

  test("a number holds exactly that many beyond the slots; 0 turns prefetch off", async () => {
    for (const prefetch of [0, 7]) {
      const { fake, worker } = await setup("api", { concurrency: 3, prefetch, handler: async () => {} });
      fake.add(
        "p",
        Array.from({ length: 50 }, (_, i) => i),
      );
      void worker.run();
      await fake.waitFor(() => fake.count("SUCCEEDED") === 50, "50 completions");
      await worker.shutdown();
      assert.equal(fake.leaseRequests[0]!.max, 3 + prefetch, `prefetch ${prefetch}`);
      assert.ok(
        fake.leaseRequests.every((r) => (r.max ?? 1) <= 3 + prefetch),
        `prefetch ${prefetch}`,
      );
    }
  });
});

describe("Worker: the handler's signal", () => {
  test("read only after the attempt was lost, it is already aborted", async () => {
    const lost = gate();
    let seen: AbortSignal | undefined;
    const { fake, log, worker } = await setup("api", {
      leaseSeconds: 1,
      handler: async (_job, ctx) => {
        await lost.promise;
        seen = ctx.signal;
      },
    });
    const [id] = fake.add("p", [1]);
    void worker.run();
    await log.until(() => log.of("job:start").length === 1, "job:start");
    fake.loseLease(id!);
    await log.until(() => log.of("lease:lost").length === 1, "the heartbeat to find the lease lost");
    lost.open();
    await log.until(() => log.of("job:drop").length === 1, "job:drop");
    await worker.shutdown();
    assert.ok(seen, "the handler read its signal");
    assert.equal(seen.aborted, true);
    assert.equal((seen.reason as AttemptAbortedError).reason, "lease_lost");
  });
});

describe("Worker: shutdown grace", () => {
  test("after shutdownGraceMs, running handlers see their signal aborted with reason shutdown", async () => {
    let seen: unknown;
    const { fake, worker } = await setup("api", {
      shutdownGraceMs: 30,
      handler: async (_job, ctx) => {
        await once(ctx.signal, "abort");
        seen = ctx.signal.reason;
        throw seen;
      },
    });
    const [id] = fake.add("p", [1]);
    void worker.run();
    await fake.waitFor(() => fake.executions.get(id!)!.state === "RUNNING", "the lease");
    await worker.shutdown();
    assert.equal((seen as AttemptAbortedError).reason, "shutdown");
    assert.equal(fake.executions.get(id!)!.state, "FAILED", "the outcome is still acknowledged: the attempt is retried");
  });
});

describe("Worker: empty pools", () => {
  test("with waitSeconds 0 an empty pool is polled about once a second, not in a tight loop", async () => {
    const { fake, worker } = await setup("api", { waitSeconds: 0, handler: async () => undefined });
    void worker.run();
    await fake.waitFor(() => fake.leaseRequests.length === 1, "first poll");
    const first = performance.now();
    await fake.waitFor(() => fake.leaseRequests.length === 2, "second poll");
    assert.ok(performance.now() - first >= 900, "paused between empty polls");
    await worker.shutdown();
    assert.equal(fake.leaseRequests.length, 2);
  });
});

describe("Worker (http): server restarts", () => {
  test("the loop reports, backs off and carries on when the server goes away and comes back", async () => {
    const fake = new FakePool();
    let server = await serveApi(fake);
    const port = server.port;
    const log = new EventLog();
    const worker = new Worker({
      url: server.url,
      client: { retries: 1, retryBaseMs: 20, retryMaxMs: 50 },
      pool: "p",
      handleSignals: false,
      logger: null,
      onEvent: log.push,
      handler: async (job) => job.payload,
    });
    fake.add("p", [1, 2, 3]);
    const done = worker.run();
    await fake.waitFor(() => fake.count("SUCCEEDED") === 3, "first batch");
    await server.close();
    await log.until(() => log.of("error").some((e) => e.during === "lease"), "a lease error");
    const error = log.of("error")[0]!;
    assert.equal((error.error as { code?: string }).code, "UNAVAILABLE");
    assert.ok(typeof error.retryInMs === "number" && error.retryInMs <= 5_000);
    server = await serveApi(fake, port);
    fake.add("p", [4, 5, 6]);
    await fake.waitFor(() => fake.count("SUCCEEDED") === 6, "second batch after the restart");
    await worker.shutdown();
    await done;
    await server.close();
  });
});

describe("Worker: construction", () => {
  const handler = async (_job: LeasedExecution) => undefined;

  test("constructing starts nothing; options are validated", async () => {
    const fake = new FakePool();
    const worker = new Worker({ api: fake, pool: "p", handler });
    assert.equal(worker.state, "idle");
    assert.equal(fake.calls.lease, undefined);
    await worker.shutdown();
    assert.equal(worker.state, "stopped");
    await assert.rejects(worker.run(), /runs once/);
    assert.throws(() => new Worker({ api: fake, url: "http://x", pool: "p", handler }), /exactly one of url and api/);
    assert.throws(() => new Worker({ api: fake, pool: "", handler }), /pool/);
    assert.throws(() => new Worker({ api: fake, pool: "p", handler, concurency: 3 } as never), /did you mean "concurrency"/);
    assert.throws(() => new Worker({ api: fake, pool: "p", handler, waitSeconds: 61 }), RangeError);
    // The gRPC transport: a grpc:// or grpcs:// address and nothing of the HTTP client's.
    assert.throws(() => new Worker({ url: "http://x:80", transport: "grpc", pool: "p", handler }), /grpc:\/\/host:port/);
    assert.throws(() => new Worker({ api: fake, transport: "grpc", pool: "p", handler }), /grpc:\/\/host:port/);
    assert.throws(() => new Worker({ url: "grpc://x:1", transport: "grpc", pool: "p", handler, client: { retries: 1 } }), /client options/);
    assert.throws(() => new Worker({ url: "http://x:1", pool: "p", handler, ca: "pem" }), /ca is for transport "grpc"/);
    assert.throws(() => new Worker({ url: "grpc://x:1", transport: "carrier-pigeon" as never, pool: "p", handler }), /transport must be/);
    await new Worker({ url: "grpcs://x:1", transport: "grpc", pool: "p", handler, handleSignals: false }).shutdown();
  });

  test("Symbol.asyncDispose shuts the worker down", async () => {
    const fake = new FakePool();
    const worker = new Worker({ api: fake, pool: "p", handler, waitSeconds: 20 });
    const done = worker.run();
    await fake.waitFor(() => fake.leaseRequests.length === 1, "a long poll");
    await worker[Symbol.asyncDispose]();
    await done;
    assert.equal(worker.state, "stopped");
  });
});
