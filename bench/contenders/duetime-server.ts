// duetime as a user deploys it: `duetime serve` child process(es) sharing one
// store, SDK workers over keep-alive HTTP in this process. The store, the
// number of nodes and where the due index lives are parameters: duetime-server
// is one node on SQLite, duetime-pg-1 and duetime-pg-3 are one and three nodes
// on PostgreSQL, and the -redis contenders add `--due-index` (the
// due entries of recurring jobs in Redis sorted sets; one-offs never use it).
// duetime-grpc is duetime-server with its workers on the gRPC Work stream
// (`--grpc-port`, SDK transport "grpc") instead of HTTP long polls.
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { DuetimeClient, Worker } from "@duetime/sdk";
import type { BenchJob, Contender, ContenderContext, Started } from "../contender.js";
import { pidsNamed } from "../procstat.js";
import { freshDatabase, redisPrefix, type FreshDatabase, type RedisPrefix } from "../services.js";
import { assertCreated, BENCH_POOL, benchJobs, durabilityLabel, duetimeVersion, sqliteBytes, WORKER_TUNING } from "./duetime-jobs.js";

const ROOT = new URL("../../", import.meta.url).pathname;
/** Extra node flags for the `duetime serve` children, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof" (Node 20 refuses --cpu-prof in NODE_OPTIONS). */
const SERVER_NODE_ARGS = (process.env.BENCH_SERVER_NODE_ARGS ?? "").split(" ").filter(Boolean);

/** Where the nodes keep their data for one run. */
export interface ServerStore {
  /** The --store argument every node gets. */
  arg: string;
  /** How it is described in the settings, e.g. "SQLite WAL synchronous=FULL". */
  label: string;
  bytes(): Promise<number>;
  drop(): Promise<void>;
  /** The PostgreSQL database, when the store is one (its backends' CPU and its rows written are measured). */
  database?: FreshDatabase;
}

export interface DuetimeServerOptions {
  name: string;
  /** `duetime serve` processes sharing the store; workers and inserts are spread evenly over them. */
  nodes: number;
  store(ctx: ContenderContext, name: string): Promise<ServerStore>;
  /** `--due-index` on BENCH_REDIS_URL under a key prefix of this run's own, deleted afterwards. */
  redisDueIndex?: boolean;
  /** Serve gRPC too (`--grpc-port 0`) and run the workers on its Work stream. */
  grpc?: boolean;
  /** Another build's package folder to spawn `bin/duetime.js` from (`--baseline DIR`: the contender `<name>@baseline`); default this checkout. */
  root?: string;
}

export class DuetimeServers implements Contender {
  readonly name: string;
  version = duetimeVersion();
  settings = "";
  readonly cron = true;
  private children: ChildProcess[] = [];
  private clients: DuetimeClient[] = [];
  private workers: Worker[] = [];
  private urls: string[] = [];
  /** Each node's gRPC address, with options.grpc. */
  private grpcAddresses: string[] = [];
  private store: ServerStore | null = null;
  private index: RedisPrefix | null = null;
  private ctx!: ContenderContext;
  private next = 0;
  /** Set by setup() when the store is a PostgreSQL database. */
  rowsWritten?: () => Promise<number>;
  /** Set by setup() with a Redis due index. */
  indexBytes?: () => Promise<number>;
  indexPids?: () => number[];
  indexState?: () => Promise<{ rebuilding: number; added: number }>;
  dropIndex?: () => Promise<void>;

  constructor(private readonly options: DuetimeServerOptions) {
    this.name = options.name;
    if (options.root) this.version = `duetime serve of the baseline build in ${options.root}`;
  }

  async setup(ctx: ContenderContext): Promise<void> {
    this.ctx = ctx;
    this.store = await this.options.store(ctx, this.name);
    const db = this.store.database;
    if (db) this.rowsWritten = () => db.rowsWritten();
    if (this.options.redisDueIndex) {
      this.index = await redisPrefix(`bench-${this.name.replace("@", "-")}-${ctx.runId}:`);
      const index = this.index;
      this.indexBytes = () => index.bytes();
      this.indexPids = () => pidsNamed(["redis-server"]);
      this.indexState = () => this.reconcilerState();
      this.dropIndex = () => index.clear();
    }
    const { nodes } = this.options;
    this.settings =
      `${nodes} \`duetime serve\` child process${nodes > 1 ? "es" : ""} (log level warn, --node-id ${nodes > 1 ? `node-1…node-${nodes}` : "node-1"}), ${this.store.label}; ` +
      (this.index
        ? `due index of recurring jobs in Redis (--due-index ${this.index.url} --due-index-prefix bench-${this.name}-<run>:, keys deleted after the run), the store holding the due entries as ever; `
        : "") +
      `POST /v1/jobs:batch of 1,000 with Prefer: return=minimal${nodes > 1 ? " round-robin over the nodes" : ""}; ` +
      `${nodes > 1 ? `${nodes} SDK Workers (one per node), ` : "SDK Worker, "}concurrency ${ctx.concurrency} in total, ` +
      (this.options.grpc
        ? `one gRPC Work stream per Worker (SDK transport "grpc", plaintext on loopback; credit = free slots + prefetch), jobs created over keep-alive HTTP, `
        : `keep-alive HTTP, lease long poll waitSeconds 5, `) +
      `SDK defaults (prefetch "auto", batched acks: ackDelayMs 20, maxAckBatch 1,000); engine defaults${WORKER_TUNING.label}`;
    for (let i = 0; i < nodes; i++) {
      const { url, grpc } = await this.spawnNode(i);
      this.urls.push(url);
      if (grpc) this.grpcAddresses.push(grpc);
    }
    this.clients = this.urls.map((url) => new DuetimeClient({ url }));
  }

  private spawnNode(i: number): Promise<{ url: string; grpc?: string }> {
    const child = spawn(
      process.execPath,
      // Every node gets its own id: the default (host and port) would be the same for all with --port 0.
      [
        ...SERVER_NODE_ARGS,
        join(this.options.root ?? ROOT, "bin/duetime.js"),
        "serve",
        "--port",
        "0",
        "--node-id",
        `node-${i + 1}`,
        "--store",
        this.store!.arg,
        "--log-level",
        "warn",
        ...(this.index ? ["--due-index", this.index.url, "--due-index-prefix", this.index.prefix] : []),
        ...(this.options.grpc ? ["--grpc-port", "0"] : []),
      ],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    this.children.push(child);
    return new Promise((resolve, reject) => {
      let out = "";
      child.stdout!.on("data", (chunk: Buffer) => {
        out += chunk.toString();
        const url = /http:\/\/[^\s]+/.exec(out)?.[0];
        const grpc = /serving gRPC workers on (\S+)/.exec(out)?.[1];
        if (url && (grpc || !this.options.grpc)) resolve(grpc ? { url, grpc } : { url });
      });
      child.once("exit", (code) => reject(new Error(`duetime serve (node ${i}) exited with ${code}`)));
    });
  }

  async enqueue(jobs: BenchJob[]): Promise<void> {
    const client = this.clients[this.next++ % this.clients.length]!;
    // What a throughput client does: it needs each job's id, not the whole answer echoed (warnings still come in Duetime-Warning).
    assertCreated(await client.createJobs(benchJobs(jobs), { returnMinimal: true }));
  }

  async startWorkers(started: Started): Promise<void> {
    const per = Math.ceil(this.ctx.concurrency / this.urls.length);
    this.workers = this.urls.map(
      (url, i) =>
        new Worker({
          ...(this.options.grpc ? { url: `grpc://${this.grpcAddresses[i]}`, transport: "grpc" as const } : { url }),
          pool: BENCH_POOL,
          concurrency: Math.min(per, this.ctx.concurrency - per * i),
          waitSeconds: 5,
          handleSignals: false,
          ...WORKER_TUNING.options,
          handler: async (job) => {
            started((job.payload as { seq: number }).seq);
          },
        }),
    );
    for (const w of this.workers) void w.run();
  }

  async outstanding(): Promise<number> {
    const s = await this.clients[0]!.poolStats(BENCH_POOL);
    return s.pending + s.queued + s.running;
  }

  async storeBytes(): Promise<number> {
    return this.store!.bytes();
  }

  servicePids(): number[] {
    return this.store?.database?.backendPids() ?? [];
  }

  schedulerPids(): number[] {
    return this.children.flatMap((c) => (c.pid !== undefined && c.exitCode === null ? [c.pid] : []));
  }

  private async reconcilerState(): Promise<{ rebuilding: number; added: number }> {
    const texts = await Promise.all(this.urls.map(async (url) => (await fetch(`${url}/metrics`)).text()));
    return {
      rebuilding: texts.reduce((sum, t) => sum + metricValue(t, "duetime_due_index_rebuilding_shards"), 0),
      added: texts.reduce((sum, t) => sum + metricValue(t, 'duetime_due_index_repaired_total{repair="added"}'), 0),
    };
  }

  async teardown(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.shutdown()));
    await Promise.all(this.clients.map((c) => c.close()));
    await Promise.all(
      this.children.map(async (child) => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        const exited = new Promise((r) => child.once("exit", r));
        child.kill("SIGTERM");
        const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
        await exited;
        clearTimeout(timer);
      }),
    );
    await this.store?.drop();
    // After the nodes are gone: nothing writes under the prefix any more.
    await this.index?.drop();
  }
}

/** One node on a SQLite file in the run's directory. */
export const sqliteStore = async (ctx: ContenderContext): Promise<ServerStore> => {
  const file = join(ctx.dir, "duetime.db");
  return { arg: `sqlite:${file}`, label: `SQLite WAL ${durabilityLabel("sqlite")}`, bytes: async () => sqliteBytes(file), drop: async () => {} };
};

/** A fresh PostgreSQL database per run, dropped afterwards. */
export const postgresStore = async (ctx: ContenderContext, name: string): Promise<ServerStore> => {
  const db = await freshDatabase(name, ctx.runId);
  return {
    arg: db.url,
    label: `PostgreSQL ${durabilityLabel("postgres")} (fresh database ${db.name})`,
    bytes: () => db.sizeBytes(),
    drop: () => db.drop(),
    database: db,
  };
};

let postgresProbe: Promise<string | undefined> | undefined;

/**
 * Why `duetime serve --store postgres://…` cannot work in this checkout
 * (PostgreSQL down, or a duetime without the PostgreSQL store), or undefined
 * when it can: `duetime migrate` on a fresh database, once per process.
 */
export function postgresStoreProblem(): Promise<string | undefined> {
  postgresProbe ??= (async () => {
    let db: FreshDatabase | undefined;
    try {
      db = await freshDatabase("probe", String(process.pid));
      await promisify(execFile)(process.execPath, [join(ROOT, "bin/duetime.js"), "migrate", "--store", db.url]);
      return undefined;
    } catch (e) {
      const err = e as Error & { stderr?: string };
      return (err.stderr?.trim() || err.message).split("\n")[0];
    } finally {
      await db?.drop();
    }
  })();
  return postgresProbe;
}

/** A contender run from another build (`--baseline DIR`), under its own name. */
export interface Baseline {
  name?: string;
  root?: string;
}

export const duetimeServer = (o: Baseline = {}) =>
  new DuetimeServers({ name: o.name ?? "duetime-server", nodes: 1, store: sqliteStore, root: o.root });
export const duetimeGrpc = (o: Baseline = {}) =>
  new DuetimeServers({ name: o.name ?? "duetime-grpc", nodes: 1, store: sqliteStore, grpc: true, root: o.root });
export const duetimePg1 = (o: Baseline = {}) => new DuetimeServers({ name: o.name ?? "duetime-pg-1", nodes: 1, store: postgresStore, root: o.root });
export const duetimePg3 = (o: Baseline = {}) => new DuetimeServers({ name: o.name ?? "duetime-pg-3", nodes: 3, store: postgresStore, root: o.root });
export const duetimeServerRedis = (o: Baseline = {}) =>
  new DuetimeServers({ name: o.name ?? "duetime-server-redis", nodes: 1, store: sqliteStore, redisDueIndex: true, root: o.root });
export const duetimePgRedis = (o: Baseline = {}) =>
  new DuetimeServers({ name: o.name ?? "duetime-pg-redis", nodes: 1, store: postgresStore, redisDueIndex: true, root: o.root });
export const duetimePg3Redis = (o: Baseline = {}) =>
  new DuetimeServers({ name: o.name ?? "duetime-pg-3-redis", nodes: 3, store: postgresStore, redisDueIndex: true, root: o.root });

let redisProbe: Promise<string | undefined> | undefined;

/** A gauge's or counter's value in a /metrics text (0 when absent). */
function metricValue(text: string, series: string): number {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : 0;
}

/** Why a Redis due index cannot work here (Redis unreachable), or undefined when it can; once per process. */
export function redisDueIndexProblem(): Promise<string | undefined> {
  redisProbe ??= redisPrefix(`bench-probe-${process.pid}:`).then(
    (r) => r.drop().then(() => undefined),
    (e: Error) => e.message,
  );
  return redisProbe;
}
