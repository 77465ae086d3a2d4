// An I/O error under a real `duetime serve` on SQLite, under load (clients
// creating jobs, a worker running them). The kernel fails the server's own
// reads, writes and syncs of its database files with EIO: strace attaches to
// the running server and injects the error into pread64/preadv/pwrite64/
// pwritev/fsync/fdatasync on those paths (-P), from the second call of each
// on, so the first transaction it meets fails part-way, after some of its
// WAL frames were written. Detaching strace heals the "disk". (A
// device-mapper `error` target would fail the block device itself, but this
// machine's kernel has no device-mapper; the syscall is where the server
// meets either.)
//
// While the errors last: every refused call answers 503 STORE_UNAVAILABLE,
// never 500 (kind "io" for a write, "corrupt" for a read: SQLite reports a
// read's EIO as SQLITE_CORRUPT), the process lives on, /readyz is not ready,
// /healthz is up. Healed without a restart, the node is ready again by
// itself, takes writes and the worker runs on. Failed again, healed and
// SIGKILLed under the load: a fresh server on the file answers every job
// answered 201, and the file passes integrity_check.
//
// Needs root (or ptrace rights over the server) and strace: with CI=true a
// missing one fails the test; elsewhere it is skipped, loudly.

import assert from "node:assert/strict";
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { Worker } from "@duetime/sdk";
import { spawnServer, waitFor, type ServerProcess } from "../helpers.js";
import { assertAcceptedSurvive, call, type Reply } from "../store-faults.js";

/** A failing disk: its reads, writes and syncs. */
const DISK = "pread64,preadv,pwrite64,pwritev,fsync,fdatasync";
/** Only the syncs: writes land in the OS's cache, and never reach the disk. */
const SYNCS = "fsync,fdatasync";

/** Why EIO cannot be injected here, or null when it can: strace must be able to attach to a process of ours. */
function injectionProblem(): string | null {
  if (spawnSync("strace", ["-V"]).status !== 0) return "strace is not installed (Debian package strace)";
  const sleeper = spawn("sleep", ["0.3"]);
  const r = spawnSync("strace", ["-qq", "-e", "trace=none", "-p", String(sleeper.pid)], { encoding: "utf8", timeout: 10_000 });
  sleeper.kill();
  return r.status === 0 ? null : `strace cannot attach to a process (${r.stderr.trim()}): run as root`;
}

/** Why EIO cannot be injected here, or null. With CI=true that is a failing test; elsewhere the tests are left out, loudly. */
const problem = injectionProblem();
if (problem !== null && process.env.CI === "true")
  test("I/O errors can be injected (strace)", () => assert.fail(`cannot inject I/O errors: ${problem}`));
else if (problem !== null) console.error(`\n!!! SKIPPED sqlite-io-error: cannot inject I/O errors: ${problem}; CI=true fails instead\n`);

interface Injection {
  /** Detaches strace: the server's calls reach the disk again. Resolves once it is gone. */
  heal(): Promise<void>;
  /** The calls failed so far, from strace's log. */
  injected(): number;
}

/** Makes the server's writes and syncs of `paths` fail with EIO until heal(); resolves once strace is attached to all its threads. */
async function failIo(server: ChildProcess, paths: string[], log: string, syscalls = DISK): Promise<Injection> {
  const strace = spawn(
    "strace",
    [
      "-f",
      "-p",
      String(server.pid),
      "-o",
      log,
      ...paths.flatMap((p) => ["-P", p]),
      "-e",
      `trace=${syscalls}`,
      "-e",
      `inject=${syscalls}:error=EIO:when=2+`,
    ],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  injections.add(strace);
  let err = "";
  await new Promise<void>((resolve, reject) => {
    strace.stderr!.on("data", (chunk: Buffer) => {
      err += chunk.toString();
      if (/attached/.test(err)) resolve();
    });
    strace.once("exit", (code) => reject(new Error(`strace exited with ${code}: ${err}`)));
  });
  return {
    async heal() {
      if (strace.exitCode === null && strace.signalCode === null) {
        const gone = new Promise((r) => strace.once("exit", r));
        strace.kill("SIGINT");
        await gone;
      }
      injections.delete(strace);
    },
    injected: () => (readFileSync(log, "utf8").match(/\(INJECTED\)/g) ?? []).length,
  };
}

/** strace processes still attached: killed when the test ends however it ends (a killed tracer detaches its tracees). */
const injections = new Set<ChildProcess>();

/** The server's log lines (JSON, on its standard output). */
function serverLog(child: ChildProcess): { msg: string; level: number; err?: { message?: string } }[] {
  const lines: { msg: string; level: number }[] = [];
  let tail = "";
  child.stdout!.on("data", (chunk: Buffer) => {
    const parts = (tail + chunk.toString()).split("\n");
    tail = parts.pop() ?? "";
    for (const line of parts) if (line.startsWith("{")) lines.push(JSON.parse(line));
  });
  return lines;
}

/** Every refusal was 503 STORE_UNAVAILABLE of the disk's kinds: a write (io) or a read (corrupt, as SQLite reports a read's EIO). */
function assertOnly503(refused: Map<string, number>): void {
  const other = [...refused.keys()].filter((k) => !/^503 STORE_UNAVAILABLE (io|corrupt)$/.test(k));
  assert.deepEqual(other, [], `refusals other than 503 STORE_UNAVAILABLE: ${JSON.stringify(Object.fromEntries(refused))}`);
}

const spec = (i: number) => ({
  name: `io-${i}`,
  target: { type: "queue", pool: "io" },
  payload: { i },
  schedule: { delaySeconds: 0 },
});

/** Clients creating jobs in parallel, keeping the ids answered 201 and every other answer by status and code. */
function load(url: () => string, accepted: string[], clients = 4) {
  const refused = new Map<string, number>();
  const lastRefusal: { reply?: Reply } = {};
  let stopped = false;
  let n = 0;
  const loop = async () => {
    while (!stopped) {
      let r: Reply;
      try {
        r = await call(`${url()}/v1/jobs`, "POST", spec(n++));
      } catch {
        // Killed under the call (once stopped): nothing answered, nothing accepted. Before that, a crash or a hang-up: counted.
        if (stopped) return;
        refused.set("no answer", (refused.get("no answer") ?? 0) + 1);
        await new Promise((r) => setTimeout(r, 50));
        continue;
      }
      if (r.status === 201) accepted.push(r.json.jobId!);
      else {
        const key = `${r.status} ${r.json.error?.code} ${r.json.error?.details?.kind ?? ""}`.trim();
        refused.set(key, (refused.get(key) ?? 0) + 1);
        lastRefusal.reply = r;
        await new Promise((r) => setTimeout(r, 20));
      }
    }
  };
  const loops = Array.from({ length: clients }, loop);
  return {
    refused,
    lastRefusal,
    created: () => n,
    async stop() {
      stopped = true;
      await Promise.all(loops);
    },
  };
}

if (problem === null) {
  test("an I/O error under load: 503 STORE_UNAVAILABLE, not ready, alive; ready again once healed; every 201 survives a SIGKILL", {
    timeout: 180_000,
  }, async (t) => {
    const dir = mkdtempSync(join(tmpdir(), "duetime-ioerr-"));
    const db = join(dir, "duetime.db");
    const paths = [db, `${db}-wal`, `${db}-shm`, `${db}-journal`];
    const start = () => spawnServer({ url: `sqlite:${db}`, options: {}, args: ["--store", `sqlite:${db}`] });
    let server: ServerProcess | undefined;
    let worker: Worker | undefined;
    let stopLoad: (() => Promise<void>) | undefined;
    t.after(async () => {
      for (const strace of injections) strace.kill("SIGKILL");
      await stopLoad?.();
      await worker?.shutdown();
      await server?.stop("SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    });

    server = await start();
    const log = serverLog(server.child);
    const url = server.url;
    const accepted: string[] = [];
    let ran = 0;
    const workerErrors = new Map<string, number>();
    worker = new Worker({
      url,
      pool: "io",
      concurrency: 20,
      waitSeconds: 1,
      handleSignals: false,
      logger: null,
      onEvent: (e) => {
        if (e.type !== "error") return;
        const err = e.error as { status?: number; code?: string };
        const key = `${e.during} ${err.status ?? ""} ${err.code ?? String(e.error)}`;
        workerErrors.set(key, (workerErrors.get(key) ?? 0) + 1);
      },
      handler: async () => {
        ran++;
      },
    });
    void worker.run();
    const creators = load(() => url, accepted);
    stopLoad = creators.stop;
    const refusedSoFar = () => [...creators.refused.values()].reduce((a, b) => a + b, 0);
    await waitFor(() => accepted.length >= 100 && ran >= 50, "the load runs: 100 jobs created, 50 run");

    // The disk fails under the load.
    let io = await failIo(server.child, paths, join(dir, "strace-1.log"));
    const failedAt = { accepted: accepted.length, at: Date.now() };
    await waitFor(() => creators.refused.size > 0, "a create refused while the disk fails");
    const refusal = creators.lastRefusal.reply!;
    assertOnly503(creators.refused);
    assert.match(refusal.json.error!.message, /I\/O error|could not be read/);
    assert.match(String(refusal.retryAfter), /^\d+$/);
    const readyz = await call(`${url}/readyz`);
    assert.equal(readyz.status, 503, "not ready while the disk fails");
    assert.equal(readyz.json.error?.code, "UNAVAILABLE");
    assert.equal((await call(`${url}/healthz`)).status, 200);
    assert.match(await (await fetch(`${url}/metrics`)).text(), /^duetime_store_writable 0$/m);
    // A read answers from SQLite's cache, or is refused the same way.
    const read = await call(`${url}/v1/jobs/${accepted[0]}`);
    assert.ok(read.status === 200 || read.json.error?.code === "STORE_UNAVAILABLE", JSON.stringify(read.json));
    // The load goes on under the errors until the worker's calls are refused too (its lease call backs off first).
    await waitFor(() => [...workerErrors.keys()].some((k) => /^(lease|ack) 503 STORE_UNAVAILABLE$/.test(k)), "a worker call refused 503", 30_000);
    assert.equal(server.child.exitCode, null, "the server is still running");
    assertOnly503(creators.refused);
    const healAt = Date.now();
    await io.heal();
    console.log(
      `# sqlite-io-error: ${failedAt.accepted} accepted before the fault; ${io.injected()} syscalls failed with EIO over ${healAt - failedAt.at} ms; ` +
        `${refusedSoFar()} creates refused 503 (${JSON.stringify(Object.fromEntries(creators.refused))}), ${accepted.length - failedAt.accepted} answered 201 meanwhile`,
    );

    // Healed without a restart: the node finds out by itself (its write probe, or the next /readyz) and takes writes again.
    await waitFor(async () => (await call(`${url}/readyz`)).status === 200, "ready again once healed", 30_000);
    const readyAfterMs = Date.now() - healAt;
    const acceptedAtReady = accepted.length;
    const ranAtReady = ran;
    await waitFor(() => accepted.length >= acceptedAtReady + 50, "creates accepted again after the heal");
    await waitFor(() => ran >= ranAtReady + 20, "the worker runs jobs again");
    assert.match(await (await fetch(`${url}/metrics`)).text(), /^duetime_store_writable 1$/m);
    console.log(`# sqlite-io-error: ready again ${readyAfterMs} ms after the heal, no restart; the worker ran ${ran - ranAtReady} more jobs`);

    // Fails again, is healed, and is killed under the load before it has seen the disk come back.
    const refusedBefore = refusedSoFar();
    io = await failIo(server.child, paths, join(dir, "strace-2.log"));
    await waitFor(() => refusedSoFar() >= refusedBefore + 20, "creates refused again");
    assertOnly503(creators.refused);
    await io.heal();
    const stopping = creators.stop();
    await server.stop("SIGKILL");
    await stopping;
    assertOnly503(creators.refused);
    console.log(
      `# sqlite-io-error: ${accepted.length} answered 201 of ${creators.created()} creates; the worker ran ${ran}; worker errors ${JSON.stringify(Object.fromEntries(workerErrors))}`,
    );
    // Every failed store call was a fault the server knew: none answered 500 (logged "unexpected error") or broke a loop.
    const unexpected = log.filter((l) => l.level >= 50 && l.msg !== "store call failed: the store cannot serve");
    assert.deepEqual(
      unexpected.map((l) => `${l.msg}: ${l.err?.message}`),
      [],
    );

    await assertAcceptedSurvive(start, db, accepted);
  });

  // Syncs alone failing (the writes land in the OS's cache): the node's full
  // commits fail (its heartbeat, a create), so it turns not ready, while the
  // worker's leases and acks go on answering 200: transitions, committed
  // without a sync of their own until a flush fails, then each with its own
  // (src/store/sqlite/durability.test.ts shows the switch).
  test("syncs that fail under a worker alone: not ready, creates refused 503, the worker runs on; ready again once healed; every job survives a SIGKILL", {
    timeout: 180_000,
  }, async (t) => {
    const dir = mkdtempSync(join(tmpdir(), "duetime-syncerr-"));
    const db = join(dir, "duetime.db");
    const paths = [db, `${db}-wal`, `${db}-shm`];
    const start = () => spawnServer({ url: `sqlite:${db}`, options: {}, args: ["--store", `sqlite:${db}`] });
    const server = await start();
    let worker: Worker | undefined;
    t.after(async () => {
      for (const strace of injections) strace.kill("SIGKILL");
      await worker?.shutdown();
      await server.stop("SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    });
    const accepted: string[] = [];
    for (let i = 0; i < 2000; i++) {
      const r = await call(`${server.url}/v1/jobs`, "POST", spec(i));
      assert.equal(r.status, 201, JSON.stringify(r.json));
      accepted.push(r.json.jobId!);
    }
    let ran = 0;
    const workerErrors: string[] = [];
    worker = new Worker({
      url: server.url,
      pool: "io",
      concurrency: 20,
      waitSeconds: 1,
      handleSignals: false,
      logger: null,
      onEvent: (e) => {
        if (e.type === "error") workerErrors.push(`${e.during} ${(e.error as { status?: number }).status} ${(e.error as { code?: string }).code}`);
      },
      handler: async () => {
        ran++;
      },
    });
    void worker.run();
    await waitFor(() => ran >= 50, "the worker runs");

    // Only the worker writes (leases and acks: transitions, committed without their own sync), and the node's own
    // background writes (its heartbeat, a full commit) find the failing syncs.
    const io = await failIo(server.child, paths, join(dir, "strace.log"), SYNCS);
    const failedAt = Date.now();
    const ranAtFault = ran;
    await waitFor(async () => (await call(`${server.url}/readyz`)).status === 503, "not ready while syncs fail", 30_000);
    const notReadyMs = Date.now() - failedAt;
    assert.match(await (await fetch(`${server.url}/metrics`)).text(), /^duetime_store_writable 0$/m);
    // A create is a full commit: refused. The worker's transitions go on, in the OS's cache (durable across a crash, not a power loss).
    const refused = await call(`${server.url}/v1/jobs`, "POST", spec(-1));
    assert.equal(refused.status, 503, JSON.stringify(refused.json));
    assert.equal(refused.json.error?.details?.kind, "io");
    await waitFor(() => ran >= ranAtFault + 50, "the worker runs on while syncs fail");
    assert.ok(
      workerErrors.every((e) => e.endsWith("503 STORE_UNAVAILABLE")),
      workerErrors.join(", "),
    );
    const ranWhileFailing = ran;
    await io.heal();
    console.log(
      `# sqlite-io-error (syncs): not ready ${notReadyMs} ms after the syncs began to fail; ${io.injected()} syncs failed; ` +
        `the worker ran ${ranWhileFailing - ranAtFault} jobs meanwhile; worker errors: ${workerErrors.length}`,
    );
    await waitFor(async () => (await call(`${server.url}/readyz`)).status === 200, "ready again once healed", 30_000);
    // Takes creates again, and the worker runs them.
    const ranAtReady = ran;
    for (let i = 0; i < 20; i++) {
      const r = await call(`${server.url}/v1/jobs`, "POST", spec(10_000 + i));
      assert.equal(r.status, 201, JSON.stringify(r.json));
      accepted.push(r.json.jobId!);
    }
    await waitFor(() => ran >= ranAtReady + 20, "the worker runs the new jobs");
    await worker.shutdown();
    worker = undefined;
    await server.stop("SIGKILL");
    await assertAcceptedSurvive(start, db, accepted);
  });
}
