// The cluster harness (issue 8): real `duetime serve` processes on ONE store,
// started, stopped, killed, paused and resumed by the tests, and workers in
// the test process that record every attempt they are handed. The store is a
// parameter (stores.ts): PostgreSQL, and a SQLite file where that adds value.
//
// Times are compared with the test process's clock: every node, the store
// and this process share one host (a node under faketime aside).

import { spawn, type ChildProcess } from "node:child_process";
import type { ClusterView, ExecutionItem, JobSpec, JobState, LeasedExecution, OccurrenceItem } from "@duetime/sdk/contract";
import { DuetimeClient, Worker, type WorkerEvent } from "@duetime/sdk";
import { waitFor } from "../helpers.js";
import type { ClusterStore } from "./stores.js";

const BIN = new URL("../../bin/duetime.js", import.meta.url).pathname;

/** Every child any harness started, killed if the test process exits with them still running. */
const children = new Set<ChildProcess>();
process.on("exit", () => {
  for (const child of children) signal(child, "SIGKILL");
});

/**
 * Signals the node's whole process group: a launcher such as faketime forks
 * the node and waits, so signalling the launcher alone would orphan the node
 * (SIGKILL) or leave it running (SIGSTOP).
 */
function signal(child: ChildProcess, name: NodeJS.Signals): void {
  try {
    process.kill(-child.pid!, name);
  } catch {
    // the group is gone already
  }
}

export interface NodeOptions {
  /** A command the node runs under, e.g. ["faketime", "-f", "+30s"]. */
  launcher?: string[];
  /** The store flags in place of the cluster's (the same store reached another way, e.g. through a proxy). */
  storeArgs?: string[];
}

export class ClusterNode {
  readonly client: DuetimeClient;
  private paused = false;
  private readonly exited: Promise<void>;

  constructor(
    readonly id: string,
    readonly url: string,
    readonly child: ChildProcess,
  ) {
    this.client = new DuetimeClient({ url, retries: 0 });
    this.exited = new Promise((resolve) => {
      if (this.gone) resolve();
      else child.once("exit", () => resolve());
    });
  }

  get gone(): boolean {
    return this.child.exitCode !== null || this.child.signalCode !== null;
  }

  /** Up and not paused: it answers requests. */
  get serving(): boolean {
    return !this.gone && !this.paused;
  }

  /** SIGTERM (a graceful stop: it hands its shards over) or SIGKILL (a crash); resolves once the process is gone. */
  async stop(name: "SIGTERM" | "SIGKILL" = "SIGTERM"): Promise<void> {
    if (this.gone) return;
    signal(this.child, name);
    if (this.paused) this.resume(); // a stopped process acts on SIGTERM only once it runs again
    await this.exited;
  }

  /** SIGSTOP: the process stands still, as in a long GC pause or a frozen VM. */
  pause(): void {
    signal(this.child, "SIGSTOP");
    this.paused = true;
  }

  resume(): void {
    signal(this.child, "SIGCONT");
    this.paused = false;
  }

  async close(): Promise<void> {
    if (!this.gone) {
      signal(this.child, "SIGKILL"); // works on a stopped process too
      await this.exited;
    }
    await this.client.close();
  }
}

/** Who holds which shards: owners with a lease not yet ended. */
export type Holdings = Map<string, number[]>;

export class Cluster {
  readonly nodes = new Map<string, ClusterNode>();
  private readonly workers: Worker[] = [];
  /** Every process this cluster spawned, listening yet or not. */
  private readonly spawned: ChildProcess[] = [];

  constructor(readonly store: ClusterStore) {}

  /** `duetime serve --node-id ID` on the cluster's store; resolves once it listens. */
  async start(id: string, options: NodeOptions = {}): Promise<ClusterNode> {
    const argv = [process.execPath, BIN, "serve", "--port", "0", "--node-id", id, ...(options.storeArgs ?? this.store.args), "--log-level", "warn"];
    const [command, ...args] = [...(options.launcher ?? []), ...argv] as [string, ...string[]];
    // Its own process group (detached), so a signal reaches the node under any launcher.
    const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"], detached: true });
    children.add(child);
    this.spawned.push(child);
    child.once("exit", () => children.delete(child));
    // The node's log lines, prefixed with its id: what it said is part of the evidence when a test fails.
    child.stderr!.on("data", (chunk: Buffer) => {
      for (const line of chunk.toString().split("\n")) if (line.trim()) process.stderr.write(`[${id}] ${line}\n`);
    });
    const url = await new Promise<string>((resolve, reject) => {
      let out = "";
      const onData = (chunk: Buffer) => {
        out += chunk.toString();
        const m = /duetime listening on (http:\/\/\S+)/.exec(out);
        if (m) {
          child.stdout!.off("data", onData);
          child.off("exit", onExit);
          resolve(m[1]!);
        }
      };
      const onExit = (code: number | null) => reject(new Error(`node ${id} exited with ${code} before listening: ${out}`));
      child.stdout!.on("data", onData);
      child.once("exit", onExit);
    });
    child.stdout!.resume();
    const node = new ClusterNode(id, url, child);
    this.nodes.set(id, node);
    return node;
  }

  /**
   * Starts the nodes: the first alone (it creates the schema), then the rest at
   * once. (Several processes migrating a fresh SQLite file at once can collide:
   * "table jobs already exists".)
   */
  async startAll(ids: string[], options: NodeOptions = {}): Promise<ClusterNode[]> {
    const [first, ...rest] = ids;
    const nodes = [await this.start(first!, options)];
    nodes.push(...(await Promise.all(rest.map((id) => this.start(id, options)))));
    return nodes;
  }

  node(id: string): ClusterNode {
    const node = this.nodes.get(id);
    if (!node) throw new Error(`no node ${id}`);
    return node;
  }

  /** A client of some serving node (the first started that still serves). */
  get client(): DuetimeClient {
    for (const node of this.nodes.values()) if (node.serving) return node.client;
    throw new Error("no node is serving");
  }

  /** Shards per owner whose lease has not ended, as the store says (GET /v1/cluster through a serving node). */
  async holdings(via: DuetimeClient = this.client): Promise<Holdings> {
    return holdingsOf(await via.cluster());
  }

  /** Shard counts per owner, e.g. {"n1": 86, "n2": 85, "n3": 85}, owners sorted. */
  async counts(via?: DuetimeClient): Promise<Record<string, number>> {
    return countsOf(await this.holdings(via));
  }

  /** Waits until the shard counts are exactly `expected`; answers how long that took. */
  async waitForCounts(expected: Record<string, number>, timeoutMs: number, via?: DuetimeClient): Promise<number> {
    const started = Date.now();
    const want = JSON.stringify(sortKeys(expected));
    let last = "";
    try {
      await waitFor(async () => (last = JSON.stringify(await this.counts(via))) === want, `shards held ${want}`, timeoutMs);
    } catch (err) {
      throw new Error(`${(err as Error).message}; last seen ${last}`);
    }
    return Date.now() - started;
  }

  /** A worker in this process, leasing through one node: every attempt it is handed goes into the recorder. */
  worker(
    node: ClusterNode,
    pool: string,
    recorder: Deliveries,
    options: { concurrency?: number; workerId?: string; busyMs?: number; leaseSeconds?: number; onEvent?: (event: WorkerEvent) => void } = {},
  ): Worker {
    const workerId = options.workerId ?? `${node.id}-w${this.workers.length}`;
    const worker = new Worker({
      url: node.url,
      pool,
      workerId,
      concurrency: options.concurrency ?? 16,
      waitSeconds: 1,
      leaseSeconds: options.leaseSeconds ?? 30,
      handleSignals: false,
      logger: null,
      ...(options.onEvent ? { onEvent: options.onEvent } : {}),
      client: { retries: 0 },
      handler: async (job) => {
        recorder.record(job, workerId, node.id);
        if (options.busyMs) await new Promise((r) => setTimeout(r, options.busyMs));
        return null;
      },
    });
    void worker.run();
    this.workers.push(worker);
    return worker;
  }

  /** Kills every node (even a paused one) and stops the workers: safe to call when a test failed half-way. */
  async close(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.shutdown().catch(() => {})));
    await Promise.all([...this.nodes.values()].map((n) => n.close()));
    await Promise.all(this.spawned.map((child) => exitOf(child, "SIGKILL")));
    await this.store.drop();
  }
}

/** Sends the signal unless the process is gone; resolves once it is. */
function exitOf(child: ChildProcess, name: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  const gone = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  signal(child, name);
  return gone;
}

export function holdingsOf(view: ClusterView, at = Date.now()): Holdings {
  const byOwner: Holdings = new Map();
  for (const s of view.shards) {
    if (s.owner !== null && Date.parse(s.leaseUntil) >= at) byOwner.set(s.owner, [...(byOwner.get(s.owner) ?? []), s.shard]);
  }
  return byOwner;
}

export function countsOf(holdings: Holdings): Record<string, number> {
  return sortKeys(Object.fromEntries([...holdings].map(([owner, shards]) => [owner, shards.length])));
}

function sortKeys<T>(record: Record<string, T>): Record<string, T> {
  return Object.fromEntries(Object.entries(record).sort(([a], [b]) => (a < b ? -1 : 1)));
}

/** One attempt as a worker received it. */
export interface Delivery {
  executionId: string;
  jobId: string;
  attempt: number;
  scheduledFor: number;
  receivedAt: number;
  workerId: string;
  /** The node the worker leased through. */
  via: string;
  /** The grant's lease token, as the lease gave it. */
  leaseToken?: string;
}

/** Every attempt handed to the test's workers, in order. */
export class Deliveries {
  readonly all: Delivery[] = [];

  record(job: LeasedExecution, workerId: string, via: string): void {
    this.all.push({
      executionId: job.executionId,
      jobId: job.jobId,
      attempt: job.attempt,
      scheduledFor: Date.parse(job.scheduledFor),
      receivedAt: Date.now(),
      workerId,
      via,
      ...(job.leaseToken !== undefined ? { leaseToken: job.leaseToken } : {}),
    });
  }

  /** Keys handed out more than once, with how often. */
  repeated(key: (d: Delivery) => string): [string, number][] {
    const seen = new Map<string, number>();
    for (const d of this.all) seen.set(key(d), (seen.get(key(d)) ?? 0) + 1);
    return [...seen].filter(([, n]) => n > 1);
  }
}

/** A recurring job due every second that runs every occurrence it missed (misfire catch_up). */
export function everySecond(pool: string, i: number): JobSpec {
  return { name: `tick-${i}`, target: { type: "queue", pool }, payload: { i }, schedule: { cron: "* * * * * *", misfire: "catch_up" } };
}

/** Creates jobs in batches of up to 1,000; fails on any item that was refused. */
export async function createAll(client: DuetimeClient, specs: JobSpec[]): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < specs.length; i += 1000) {
    for (const result of await client.createJobs(specs.slice(i, i + 1000))) {
      if (!("jobId" in result)) throw new Error(`a job was refused: ${JSON.stringify(result)}`);
      ids.push(result.jobId);
    }
  }
  return ids;
}

/** How many jobs are in the state. */
export async function countJobs(client: DuetimeClient, state: JobState): Promise<number> {
  let count = 0;
  let cursor: string | undefined;
  do {
    const page = await client.listJobs({ state, limit: 500, ...(cursor ? { cursor } : {}) });
    count += page.items.length;
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return count;
}

/** Every execution item of a job (every attempt), newest first. */
export async function history(client: DuetimeClient, jobId: string): Promise<ExecutionItem[]> {
  const items: ExecutionItem[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.listExecutions(jobId, { limit: 500, ...(cursor ? { cursor } : {}) });
    items.push(...page.items);
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return items;
}

/**
 * Whether the node dispatches the job's occurrences as they fall due: it
 * dispatched the last `runs` of them, the newest in the last few seconds.
 */
export async function dispatchingNow(cluster: Cluster, jobId: string, nodeId: string, runs = 1): Promise<boolean> {
  const latest = (await history(cluster.client, jobId)).slice(0, runs);
  return latest.length === runs && latest.every((i) => i.dispatchedBy === nodeId) && Date.parse(latest[0]!.scheduledFor) > Date.now() - 3_000;
}

/** The run ledger of a job for (from, to]: what became of every nominal fire time. */
export async function ledger(client: DuetimeClient, jobId: string, from: number, to: number): Promise<OccurrenceItem[]> {
  return (await client.listOccurrences(jobId, { from: new Date(from).toISOString(), to: new Date(to).toISOString() })).items;
}

/**
 * Waits until every occurrence of the job in (from, to] has an execution in
 * one of the states; on timeout the error lists those that have not.
 */
export async function waitForLedger(
  client: DuetimeClient,
  jobId: string,
  from: number,
  to: number,
  states: string[],
  timeoutMs: number,
): Promise<OccurrenceItem[]> {
  let behind: OccurrenceItem[] = [];
  try {
    return await waitFor(
      async () => {
        const items = await ledger(client, jobId, from, to);
        behind = items.filter((o) => o.status !== "dispatched" || !states.includes(o.executionState ?? ""));
        return behind.length === 0 ? items : null;
      },
      `every occurrence of ${jobId} in the window ${states.join("/")}`,
      timeoutMs,
    );
  } catch (err) {
    throw new Error(`${(err as Error).message}; not yet: ${JSON.stringify(behind.slice(0, 5))} (${behind.length} in all)`);
  }
}

/** Runs fn on every item, `limit` at a time (reads of many jobs' history without a request storm). */
export async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]!);
      }
    }),
  );
  return out;
}

/** Whole seconds: a 6-field cron fires on them. */
export const second = (ms: number) => Math.floor(ms / 1000) * 1000;
