// Bulk dead-letter replays (POST /v1/dead-letters:replay): a durable
// operation, a row of the store (store.ts replayCreate...), that the engine
// drives at the rate the operator set, so a replay of thousands of dead
// letters does not become a self-inflicted herd.
//
// - The selection: listed ids, or a filter (pool, error class, dead between
//   deadAfter and deadBefore) whose deadBefore is at the latest the replay's
//   creation, so dead letters that die later never extend it.
// - The rate: each replayed execution is READY at its own slot, 1 / rate
//   apart (the store computes them from the row's nextAt), so attempts start
//   at the rate however the driver's ticks fall. A step replays up to a
//   second and a tick ahead of the slots; `replayed` runs ahead that much.
// - The driver: every tick, this node leases the RUNNING replays that are
//   free, its own, or whose lease expired (judged by the store's clock), and
//   steps each whose next slot is within reach: one store call that replays
//   up to k dead letters still dead, each a compare-and-set on DEAD (one
//   replayed meanwhile by someone else is skipped, never replayed twice),
//   fenced by the lease. A replay survives a restart: the row holds the
//   cursor and the next slot; the same node resumes it at once, another
//   once the lease (10 s) has expired.

import { ALL_TENANTS, type DeadLetterReplay, type DeadLetterReplayRequest, type Page, type PageQuery } from "@duetime/sdk/contract";
import type { Clock, TimerHandle } from "../core/clock.js";
import { DuetimeError, invalidArgument, notFound } from "../core/errors.js";
import { newId } from "../core/ids.js";
import { parseRfc3339, toIso, toIsoOrNull } from "../core/time.js";
import type { ReplayRecord, ReplaySelection, Store } from "../store/store.js";
import { pageOf } from "./cursor.js";
import type { EngineEvents } from "./events.js";
import type { Executor } from "./executor.js";
import { actsForEveryTenant, type RequestContext } from "./service.js";

export const DEFAULT_REPLAY_RATE = 10;

export interface ReplayDriverOptions {
  store: Store;
  clock: Clock;
  events: EngineEvents;
  executor: Pick<Executor, "ready">;
  nodeId: string;
  /** How often the driver looks while it drives a replay (default 250 ms). */
  tickMs?: number;
  /** How often it looks while there is none to drive (default 2 s): a replay created here wakes it at once; this finds others' to take over. */
  idleTickMs?: number;
  /** The lease a node holds on a replay it drives (default 10 s). */
  leaseMs?: number;
  /** How far ahead of its slots a step may replay (default 1 s). */
  lookaheadMs?: number;
  /** The most a step replays (default 500). */
  maxBatch?: number;
}

export class ReplayDriver {
  private readonly tickMs: number;
  private readonly idleTickMs: number;
  /** The last pass claimed no replay: look again at the idle pace (the claim is a write). */
  private idle = false;
  private readonly leaseMs: number;
  private readonly lookaheadMs: number;
  private readonly maxBatch: number;
  private timer: TimerHandle | null = null;
  private running: Promise<number> | null = null;
  private stopping = true;

  constructor(private readonly o: ReplayDriverOptions) {
    this.tickMs = o.tickMs ?? 250;
    this.idleTickMs = o.idleTickMs ?? 2_000;
    this.leaseMs = o.leaseMs ?? 10_000;
    this.lookaheadMs = o.lookaheadMs ?? 1000;
    this.maxBatch = o.maxBatch ?? 500;
  }

  start(): void {
    this.stopping = false;
    this.schedule(0);
  }

  /** Stops after the current pass, and gives up this node's replay leases so another node resumes them at once. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.timer?.cancel();
    this.timer = null;
    await this.running;
    await this.o.store.replayRelease({ owner: this.o.nodeId }).catch((error) => this.o.events.emit("error", { where: "dead-letter-replays", error }));
  }

  /** A replay was created: look now rather than at the next tick. */
  wake(): void {
    if (this.stopping) return;
    this.timer?.cancel();
    this.schedule(0);
  }

  /** One pass: claims and steps; answers how many dead letters it replayed. Never rejects. Concurrent calls share the pass in progress. */
  runOnce(): Promise<number> {
    this.running ??= this.pass().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  private async pass(): Promise<number> {
    let total = 0;
    try {
      const claimed = await this.o.store.replayClaim({ owner: this.o.nodeId, leaseMs: this.leaseMs, now: this.o.clock.storeNow(), limit: 20 });
      this.idle = claimed.length === 0;
      for (const replay of claimed) {
        if (this.stopping) break;
        const at = this.o.clock.now();
        if (replay.nextAt > at + this.lookaheadMs) continue;
        const limit = Math.min(this.maxBatch, Math.max(1, Math.ceil((replay.ratePerSecond * (this.lookaheadMs + this.tickMs)) / 1000)));
        const step = await this.o.store.replayStep({
          replayId: replay.replayId,
          owner: this.o.nodeId,
          leaseMs: this.leaseMs,
          now: this.o.clock.storeNow(),
          at,
          limit,
        });
        if (!step) continue;
        const wakes = new Map<string, { pool: string; readyAt: number }>();
        for (const r of step.replayed) {
          const key = `${r.pool}\u0000${Math.ceil(r.readyAt / 100)}`;
          if (!wakes.has(key)) wakes.set(key, { pool: r.pool, readyAt: r.readyAt });
        }
        for (const w of wakes.values()) this.o.executor.ready(replay.tenantId, w.pool, w.readyAt);
        total += step.replayed.length;
        this.o.events.emit("dead-letters:replayed", {
          tenantId: replay.tenantId,
          replayId: replay.replayId,
          count: step.replayed.length,
          state: step.replay.state,
        });
      }
    } catch (error) {
      this.o.events.emit("error", { where: "dead-letter-replays", error });
    }
    return total;
  }

  private schedule(ms: number): void {
    if (this.stopping) return;
    this.timer = this.o.clock.setTimer(() => {
      this.timer = null;
      void this.runOnce().then(() => {
        if (!this.timer) this.schedule(this.idle ? this.idleTickMs : this.tickMs);
      });
    }, ms);
  }
}

/** The routes: create, list, get, cancel. */
export class ReplayService {
  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly driver: Pick<ReplayDriver, "wake"> | null,
  ) {}

  async create(ctx: RequestContext, request: DeadLetterReplayRequest): Promise<DeadLetterReplay> {
    const tenantId = request.tenantId ?? ctx.tenantId;
    if (tenantId === ALL_TENANTS) {
      throw invalidArgument("tenantId", "a key for every tenant (*) names the tenant whose dead letters to replay");
    }
    if (tenantId !== ctx.tenantId && !actsForEveryTenant(ctx)) {
      throw new DuetimeError(
        "PERMISSION_DENIED",
        `tenantId: an admin key of tenant ${JSON.stringify(ctx.tenantId)} replays its own tenant's dead letters only; another tenant's needs an admin key for every tenant (*) or a bootstrap admin key`,
        { field: "tenantId" },
      );
    }
    if ((request.executionIds === undefined) === (request.filter === undefined)) {
      throw invalidArgument("filter", "give exactly one of executionIds (the dead letters to replay) and filter ({} for all of them)");
    }
    const now = this.clock.now();
    let selection: ReplaySelection;
    if (request.executionIds !== undefined) {
      selection = { executionIds: [...new Set(request.executionIds)] };
    } else {
      const f = request.filter!;
      const deadBefore = Math.min(f.deadBefore !== undefined ? parseRfc3339(f.deadBefore)! : now, now);
      const deadAfter = f.deadAfter !== undefined ? parseRfc3339(f.deadAfter)! : undefined;
      if (deadAfter !== undefined && deadAfter > deadBefore) {
        throw invalidArgument("filter.deadAfter", "is later than filter.deadBefore (or than now): the filter selects nothing");
      }
      selection = {
        filter: {
          ...(f.pool !== undefined ? { pool: f.pool } : {}),
          ...(f.errorClass !== undefined ? { errorClass: f.errorClass } : {}),
          ...(deadAfter !== undefined ? { deadAfter } : {}),
          deadBefore,
        },
      };
    }
    const replayId = `rp_${newId(now)}`;
    const ratePerSecond = request.ratePerSecond ?? DEFAULT_REPLAY_RATE;
    const actor = ctx.actor ?? "admin";
    const record = await this.store.replayCreate({
      replay: { replayId, tenantId, selection, ratePerSecond, actor, createdAt: now },
      audit: {
        tenantId,
        at: now,
        actor,
        action: "dead-letter.replay-bulk",
        subject: replayId,
        details: { selection: wireSelection(selection), ratePerSecond },
      },
    });
    this.driver?.wake();
    return toWire(record);
  }

  async list(ctx: RequestContext, query: PageQuery): Promise<Page<DeadLetterReplay>> {
    return pageOf(
      query,
      { c: ["createdAt", "number"], r: ["replayId", "string"] },
      (p) => this.store.replayList({ tenantId: ctx.tenantId, ...p }),
      toWire,
    );
  }

  async get(ctx: RequestContext, replayId: string): Promise<DeadLetterReplay> {
    const found = await this.store.replayGet({ replayId, ...scope(ctx) });
    if (!found) throw notFound("dead-letter replay", replayId);
    return toWire(found);
  }

  async cancel(ctx: RequestContext, replayId: string): Promise<DeadLetterReplay> {
    const now = this.clock.now();
    const known = await this.store.replayGet({ replayId, ...scope(ctx) });
    if (!known) throw notFound("dead-letter replay", replayId);
    const result = await this.store.replayCancel({
      replayId,
      tenantId: known.tenantId,
      now,
      audit: { tenantId: known.tenantId, at: now, actor: ctx.actor ?? "admin", action: "dead-letter.replay-cancel", subject: replayId },
    });
    if (!result) throw notFound("dead-letter replay", replayId);
    if (result.replay.state === "DONE") {
      throw new DuetimeError("INVALID_STATE", `dead-letter replay ${JSON.stringify(replayId)} is DONE: nothing is left to cancel`, {
        state: "DONE",
      });
    }
    return toWire(result.replay);
  }
}

/** A tenant's key sees its own replays; an admin for every tenant sees any. */
function scope(ctx: RequestContext): { tenantId?: string } {
  return actsForEveryTenant(ctx) ? {} : { tenantId: ctx.tenantId };
}

function wireSelection(selection: ReplaySelection): DeadLetterReplay["selection"] {
  if ("executionIds" in selection) return { executionIds: selection.executionIds };
  const f = selection.filter;
  return {
    filter: {
      ...(f.pool !== undefined ? { pool: f.pool } : {}),
      ...(f.errorClass !== undefined ? { errorClass: f.errorClass } : {}),
      ...(f.deadAfter !== undefined ? { deadAfter: toIso(f.deadAfter) } : {}),
      deadBefore: toIso(f.deadBefore),
    },
  };
}

export function toWire(r: ReplayRecord): DeadLetterReplay {
  return {
    replayId: r.replayId,
    tenantId: r.tenantId,
    state: r.state,
    selection: wireSelection(r.selection),
    ratePerSecond: r.ratePerSecond,
    total: r.total,
    replayed: r.replayed,
    skipped: r.skipped,
    actor: r.actor,
    createdAt: toIso(r.createdAt),
    updatedAt: toIso(r.updatedAt),
    finishedAt: toIsoOrNull(r.finishedAt),
  };
}
