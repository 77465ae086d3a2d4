// The shard keeper: this node's membership and shard leases. Each round
// heartbeats, reads the live nodes and the shard leases, hands over shards
// beyond this node's share and takes free or expired ones up to it
// (core/shards.ts), and renews the rest. It runs on its own timer, a third
// of a lease apart, so a long dispatch pass never lets a lease lapse.
// A node that cannot renew (its database unreachable while the others reach
// it: a partition) gives its shards up in its own mind when the lease it last
// wrote runs out, as the others are about to take them, and turns not ready.

import type { Clock, TimerHandle } from "../core/clock.js";
import { planShards } from "../core/shards.js";
import type { ShardLease, Store } from "../store/store.js";
import type { EngineEvents } from "./events.js";

/** A node that stops renewing loses its shards (and its membership) this long after its last round. */
export const SHARD_LEASE_MS = 10_000;

export interface ShardKeeperOptions {
  store: Store;
  clock: Clock;
  nodeId: string;
  /** Where this node serves its API, shown by GET /v1/cluster. */
  address: string | null;
  events: EngineEvents;
  leaseMs?: number;
  /** Reads the store's clock (engine: StoreClock.sync, which also keeps the engine's clock in step); default the store's storeTime, or the time a fake clock pins. */
  storeTime?: () => Promise<number>;
  /** Told after every round the shards held and their epochs. */
  onShards: (epochs: Map<number, number>) => void;
}

export class ShardKeeper {
  private readonly leaseMs: number;
  private timer: TimerHandle | null = null;
  private running: Promise<void> | null = null;
  private stopped = true;
  private failures = 0;
  private held = 0;
  /** Whether a round has told which shards are this node's. */
  private known = false;
  /** When the last round that renewed began, by this node's clock: what it wrote runs out a lease later. */
  private renewedAt: number | null = null;
  private lapseTimer: TimerHandle | null = null;

  constructor(private readonly o: ShardKeeperOptions) {
    this.leaseMs = o.leaseMs ?? SHARD_LEASE_MS;
  }

  async start(): Promise<void> {
    this.stopped = false;
    await this.runOnce();
  }

  /** A round unless one has completed: a scheduler driven by hand (runOnce, unstarted) knows its shards. */
  async ensure(): Promise<void> {
    if (!this.known) await this.runOnce();
  }

  /** Leaves the cluster and hands every shard over, so the others take them at once. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.timer?.cancel();
    this.timer = null;
    this.lapseTimer?.cancel();
    this.lapseTimer = null;
    await this.running;
    const { store, nodeId } = this.o;
    // Left first: whoever sees the shards free already counts this node out.
    // On a failing store both pass on when the heartbeat and leases expire.
    await store.nodeLeave({ nodeId }).catch((error: unknown) => this.o.events.emit("error", { where: "shards", error }));
    if (this.held > 0) await store.shardRelease({ owner: nodeId }).catch((error: unknown) => this.o.events.emit("error", { where: "shards", error }));
    this.held = 0;
  }

  /**
   * When this node's heartbeat and shard leases run out unless a round renews
   * them (this node's clock); null while the keeper is not running.
   */
  lapsesAt(): number | null {
    return this.stopped || this.renewedAt === null ? null : this.renewedAt + this.leaseMs;
  }

  /**
   * No round has renewed for a whole lease: the others may own these shards
   * now. They are dropped (the scheduler stops dispatching from them; its
   * dispatches would be fenced anyway), until a round renews again.
   */
  private lapse(): void {
    this.lapseTimer = null;
    if (this.stopped) return;
    this.o.events.emit("shards:lapsed", { held: this.held, sinceMs: this.o.clock.now() - (this.renewedAt ?? 0) });
    this.held = 0;
    this.known = false;
    this.o.onShards(new Map());
  }

  private armLapse(): void {
    this.lapseTimer?.cancel();
    this.lapseTimer = this.o.clock.setTimer(() => this.lapse(), Math.max(0, this.lapsesAt()! - this.o.clock.now()));
  }

  /** Shards now held that another owner let expire: how long after the expiry they were taken (metrics). */
  private reportTakeovers(before: readonly ShardLease[], held: readonly ShardLease[], now: number): void {
    const previous = new Map(before.map((l) => [l.shard, l]));
    for (const lease of held) {
      const was = previous.get(lease.shard);
      if (was?.owner && was.owner !== this.o.nodeId && was.leaseUntil < now) {
        this.o.events.emit("shard:taken_over", { shard: lease.shard, from: was.owner, afterExpiryMs: now - was.leaseUntil });
      }
    }
  }

  /** One round now; a call during a round waits for it. */
  runOnce(): Promise<void> {
    if (this.running) return this.running;
    this.running = (async () => {
      let next = Math.floor(this.leaseMs / 3); // whole milliseconds, as every clock reading is
      try {
        await this.round();
        this.failures = 0;
      } catch (error) {
        this.o.events.emit("error", { where: "shards", error });
        next = Math.min(1000 * 2 ** this.failures++, next); // a failing store is retried with backoff
      } finally {
        this.running = null;
      }
      if (!this.stopped) this.schedule(next);
    })();
    return this.running;
  }

  private async round(): Promise<void> {
    const { store, clock, nodeId: self } = this.o;
    const startedAt = clock.now(); // before the store's clock is read: the lapse comes no later than the leases' end
    // Heartbeats, liveness and the plan go by the store's clock, as the leases do: a node whose own clock
    // runs ahead or behind neither counts others out early nor keeps shards late. A fake clock pins it in tests.
    const now = this.o.storeTime ? await this.o.storeTime() : (clock.storeNow() ?? (await store.storeTime()));
    await store.nodeHeartbeat({ nodeId: self, address: this.o.address, now, ttlMs: this.leaseMs });
    const nodes = await store.nodeList({ now });
    const leases = await store.shardList();
    const plan = planShards({ leases, liveNodes: nodes.map((n) => n.nodeId), self, now });
    if (plan.release.length > 0) await store.shardRelease({ owner: self, shards: plan.release });
    const held = await store.shardAcquire({ owner: self, shards: [...plan.keep, ...plan.acquire], leaseMs: this.leaseMs, now });
    this.reportTakeovers(leases, held, now);
    this.held = held.length;
    this.known = true;
    this.renewedAt = startedAt;
    if (!this.stopped) this.armLapse();
    this.o.onShards(new Map(held.map((l) => [l.shard, l.epoch])));
  }

  private schedule(ms: number): void {
    this.timer?.cancel();
    this.timer = this.o.clock.setTimer(() => {
      this.timer = null;
      void this.runOnce();
    }, ms);
  }
}
