// The Redis side of the due index: per shard, two sorted sets of job ids,
// `scheduled` (score: due time) and `leased` (score: claim deadline), and the
// Lua scripts that move ids between them atomically (lua/*.lua, each stating
// its keys, arguments, reply and cost). Members are ids only: the store holds
// the truth, this only says where to look.
//
// Both keys of a shard carry the hash tag {dt:N}, so they share a Redis
// Cluster slot: every command and script here names keys of one shard only.

import { readFileSync } from "node:fs";
import { Cluster, Redis } from "ioredis";
import type { DueRef } from "../store.js";

export interface RedisDueKeysOptions {
  url: string;
  /** Put before every key; no braces (they would move the hash tag). Default "duetime:". */
  prefix?: string;
  /** An ioredis Cluster with `url` as its seed node. */
  cluster?: boolean;
  /** A call rejects when Redis has not answered it within this (ms; default 10 s). */
  timeoutMs?: number;
}

/** Shards are 0..255 (core/shards). */
const MAX_SHARD = 255;
/** Most ids per command or script call, so no single call blocks Redis for long. */
const BATCH = 1000;
const TIMEOUT_MS = 10_000;

const lua = (name: string): string => readFileSync(new URL(`./lua/${name}.lua`, import.meta.url), "utf8");

/** The script commands defineCommand adds (ioredis cannot type them). */
interface DueScripts {
  dueClaim(scheduled: string, leased: string, max: number, claimMs: number): Promise<(string | number)[]>;
  dueAdvance(scheduled: string, leased: string, ...pairs: string[]): Promise<number>;
  dueReap(scheduled: string, leased: string, max: number): Promise<number>;
  dueRemoveIf(scheduled: string, ...pairs: string[]): Promise<number>;
  dueRepair(scheduled: string, leased: string, ...pairs: string[]): Promise<number>;
}

type Client = (Redis | Cluster) & DueScripts;

function open(o: RedisDueKeysOptions): Redis | Cluster {
  // A command fails after a few reconnect attempts instead of queueing
  // forever; the client itself goes on reconnecting in the background.
  const maxRetriesPerRequest = 2;
  if (!o.cluster) return new Redis(o.url, { lazyConnect: true, maxRetriesPerRequest, enableAutoPipelining: true });
  const seed = new URL(o.url);
  return new Cluster([{ host: seed.hostname, port: Number(seed.port || 6379) }], {
    lazyConnect: true,
    enableAutoPipelining: true,
    redisOptions: {
      maxRetriesPerRequest,
      username: decodeURIComponent(seed.username) || undefined,
      password: decodeURIComponent(seed.password) || undefined,
      tls: seed.protocol === "rediss:" ? {} : undefined,
    },
  });
}

function checkPrefix(prefix: string): string {
  if (/[{}]/.test(prefix)) throw new Error(`Due index key prefix must not contain braces: ${prefix}`);
  return prefix;
}

function checkCount(name: string, n: number): number {
  if (!Number.isInteger(n) || n < 0) throw new RangeError(`${name} must be a non-negative integer, got ${n}`);
  return n;
}

/** A score as Redis reads it; rejects NaN and infinities before they abort a script halfway. */
function score(n: number): string {
  if (!Number.isFinite(n)) throw new RangeError(`Due index score must be finite, got ${n}`);
  return String(n);
}

/** The entries grouped by shard, in slices of at most BATCH. */
function batches<T extends { shard: number }>(entries: readonly T[]): [number, T[]][] {
  const byShard = new Map<number, T[]>();
  for (const e of entries) {
    const group = byShard.get(e.shard);
    if (group) group.push(e);
    else byShard.set(e.shard, [e]);
  }
  const out: [number, T[]][] = [];
  for (const [shard, group] of byShard) for (let i = 0; i < group.length; i += BATCH) out.push([shard, group.slice(i, i + BATCH)]);
  return out;
}

/** ZADD arguments: score, member, score, member, ... */
const scoreMembers = (entries: readonly DueRef[]): string[] => entries.flatMap((e) => [score(e.dueAt), e.jobId]);

const sum = (ns: readonly number[]): number => ns.reduce((a, b) => a + b, 0);

/**
 * `work`, or a rejection after `ms`. maxRetriesPerRequest bounds a call to a
 * server that is down, but a Cluster client whose nodes all went away holds
 * calls in its own queue without bound. A late call still runs: a late claim
 * is returned by reap, like a crashed claimer's.
 */
async function within<T>(ms: number, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Redis did not answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export class RedisDueKeys {
  private constructor(
    private readonly client: Client,
    private readonly prefix: string,
    private readonly timeoutMs: number,
  ) {}

  static connect(o: RedisDueKeysOptions): RedisDueKeys {
    const client = open(o);
    // Failures reach the caller as rejected calls; without a listener ioredis prints every reconnect error.
    client.on("error", () => {});
    // defineCommand sends EVALSHA and, on NOSCRIPT (a restarted or flushed
    // server, a failover), resends the script with EVAL: the SCRIPT LOAD /
    // EVALSHA fallback, done by ioredis per connection.
    client.defineCommand("dueClaim", { numberOfKeys: 2, lua: lua("claim") });
    client.defineCommand("dueAdvance", { numberOfKeys: 2, lua: lua("advance") });
    client.defineCommand("dueReap", { numberOfKeys: 2, lua: lua("reap") });
    client.defineCommand("dueRemoveIf", { numberOfKeys: 1, lua: lua("remove-if") });
    client.defineCommand("dueRepair", { numberOfKeys: 2, lua: lua("repair") });
    return new RedisDueKeys(client as Client, checkPrefix(o.prefix ?? "duetime:"), checkCount("timeoutMs", o.timeoutMs ?? TIMEOUT_MS));
  }

  /** Plain ZADD: the writer just committed these due times to the store. */
  async add(entries: readonly DueRef[]): Promise<void> {
    await this.bounded(Promise.all(batches(entries).map(([shard, es]) => this.client.zadd(this.scheduled(shard), ...scoreMembers(es)))));
  }

  /** ZADD NX: keeps a score scheduled holds already. */
  async addIfAbsent(entries: readonly DueRef[]): Promise<void> {
    await this.bounded(Promise.all(batches(entries).map(([shard, es]) => this.client.zadd(this.scheduled(shard), "NX", ...scoreMembers(es)))));
  }

  /** Takes the jobs out of both sets: no due entry any more, and no claim to return. */
  async remove(entries: readonly { jobId: string; shard: number }[]): Promise<void> {
    const calls = batches(entries).flatMap(([shard, es]) => {
      const ids = es.map((e) => e.jobId);
      return [this.client.zrem(this.scheduled(shard), ...ids), this.client.zrem(this.leased(shard), ...ids)];
    });
    await this.bounded(Promise.all(calls));
  }

  /** Adds each entry missing from scheduled, or lowers a later score, unless claimed (repair.lua); answers how many it repaired. */
  async repair(entries: readonly DueRef[]): Promise<number> {
    const calls = batches(entries).map(([shard, es]) =>
      this.client.dueRepair(this.scheduled(shard), this.leased(shard), ...es.flatMap((e) => [e.jobId, score(e.dueAt)])),
    );
    return sum(await this.bounded(Promise.all(calls)));
  }

  /** Removes each id whose score is still `score` exactly (remove-if.lua); answers how many went. */
  async removeIf(shard: number, pairs: readonly { jobId: string; score: number }[]): Promise<number> {
    const key = this.scheduled(shard);
    const calls = batches(pairs.map((p) => ({ ...p, shard }))).map(([, ps]) =>
      this.client.dueRemoveIf(key, ...ps.flatMap((p) => [p.jobId, score(p.score)])),
    );
    return sum(await this.bounded(Promise.all(calls)));
  }

  /** Claims up to `max` due ids for `claimMs` (claim.lua); `next`: the earliest due time left, or null. */
  async claim(shard: number, max: number, claimMs: number): Promise<{ ids: string[]; next: number | null }> {
    checkCount("max", max);
    checkCount("claimMs", claimMs);
    const reply = await this.bounded(this.client.dueClaim(this.scheduled(shard), this.leased(shard), max, claimMs));
    const head = reply.pop();
    return { ids: reply.map(String), next: typeof head === "string" ? Number(head) : null };
  }

  /** Ends claims (advance.lua): each id leaves leased; a non-null `next` is added unless scheduled holds the id. Answers how many were added. */
  async advance(shard: number, items: readonly { jobId: string; next: number | null }[]): Promise<number> {
    const scheduled = this.scheduled(shard);
    const leased = this.leased(shard);
    const calls = batches(items.map((i) => ({ ...i, shard }))).map(([, is]) =>
      this.client.dueAdvance(scheduled, leased, ...is.flatMap((i) => [i.jobId, i.next === null ? "" : score(i.next)])),
    );
    return sum(await this.bounded(Promise.all(calls)));
  }

  /** Returns up to `max` expired claims to scheduled, due now (reap.lua); answers how many. */
  reap(shard: number, max: number): Promise<number> {
    return this.bounded(this.client.dueReap(this.scheduled(shard), this.leased(shard), checkCount("max", max)));
  }

  /** The earliest due time of each given shard that has one. */
  async head(shards: readonly number[]): Promise<Map<number, number>> {
    const heads = await this.bounded(Promise.all(shards.map((shard) => this.client.zrange(this.scheduled(shard), 0, 0, "WITHSCORES"))));
    const out = new Map<number, number>();
    heads.forEach((reply, i) => {
      if (reply[1] !== undefined) out.set(shards[i]!, Number(reply[1]));
    });
    return out;
  }

  /** One ZSCAN step over a shard's scheduled set; cursor "0" starts and, returned, ends. */
  async scan(shard: number, cursor: string, count: number): Promise<{ cursor: string; members: { jobId: string; score: number }[] }> {
    const [next, flat] = await this.bounded(this.client.zscan(this.scheduled(shard), cursor, "COUNT", checkCount("count", count)));
    const members: { jobId: string; score: number }[] = [];
    for (let i = 0; i + 1 < flat.length; i += 2) members.push({ jobId: flat[i]!, score: Number(flat[i + 1]) });
    return { cursor: next, members };
  }

  /** The jobs' scores in both sets, in `jobIds` order (null: not a member). */
  async scores(shard: number, jobIds: readonly string[]): Promise<{ scheduled: (number | null)[]; leased: (number | null)[] }> {
    if (jobIds.length === 0) return { scheduled: [], leased: [] };
    const read = async (key: string) => (await this.client.zmscore(key, ...jobIds)).map((s) => (s === null ? null : Number(s)));
    const [scheduled, leased] = await this.bounded(Promise.all([read(this.scheduled(shard)), read(this.leased(shard))]));
    return { scheduled, leased };
  }

  /** Members of both sets over the given shards (metrics). */
  async counts(shards: readonly number[]): Promise<{ scheduled: number; leased: number }> {
    const [scheduled, leased] = await this.bounded(
      Promise.all([
        Promise.all(shards.map((s) => this.client.zcard(this.scheduled(s)))),
        Promise.all(shards.map((s) => this.client.zcard(this.leased(s)))),
      ]),
    );
    return { scheduled: sum(scheduled), leased: sum(leased) };
  }

  /**
   * The index's generation: a value set once (`candidate`, if none is set)
   * and kept until Redis loses its data (a flush, a restart without
   * persistence), when the next call sets a new one. A changed answer tells
   * every node that the index may have lost entries.
   */
  async generation(candidate: string): Promise<string> {
    const key = `${this.prefix}{dt:meta}:generation`;
    const [, current] = await this.bounded(Promise.all([this.client.set(key, candidate, "NX"), this.client.get(key)]));
    return current ?? candidate;
  }

  /** Which of these shards a full reconciliation pass has covered in `generation` (markBuilt). */
  async builtIn(shards: readonly number[], generation: string): Promise<Set<number>> {
    const marks = await this.bounded(Promise.all(shards.map((shard) => this.client.get(this.built(shard)))));
    return new Set(shards.filter((_, i) => marks[i] === generation));
  }

  /** Records that a full pass over the shard ended in `generation`: a node that takes the shard over need not hurry through it again. */
  async markBuilt(shard: number, generation: string): Promise<void> {
    await this.bounded(this.client.set(this.built(shard), generation));
  }

  /** Redis's clock (epoch ms), the one the scripts claim and reap by. */
  async time(): Promise<number> {
    const [sec, usec] = await this.bounded(this.client.time());
    return Number(sec) * 1000 + Math.floor(Number(usec) / 1000);
  }

  async close(): Promise<void> {
    if (this.client.status !== "ready") return this.client.disconnect();
    await this.client.quit().catch(() => this.client.disconnect());
  }

  private bounded<T>(work: Promise<T>): Promise<T> {
    return within(this.timeoutMs, work);
  }

  private scheduled(shard: number): string {
    return `${this.prefix}{dt:${checkShard(shard)}}:scheduled`;
  }

  private leased(shard: number): string {
    return `${this.prefix}{dt:${checkShard(shard)}}:leased`;
  }

  private built(shard: number): string {
    return `${this.prefix}{dt:${checkShard(shard)}}:built`;
  }
}

function checkShard(shard: number): number {
  if (!Number.isInteger(shard) || shard < 0 || shard > MAX_SHARD) throw new RangeError(`shard must be an integer 0..${MAX_SHARD}, got ${shard}`);
  return shard;
}
