// Bulk dead-letter replays on SQLite (store/replays.ts has the shared
// arithmetic). A step runs in the caller's write transaction: the lease's
// compare-and-set, each selected dead letter revived by a compare-and-set on
// DEAD, the progress written by a compare-and-set on the lease the step
// renewed (no longer held: the step rolls back, db.ts Rollback).

import { nextIds, replaySlots, toReplay } from "../replays.js";
import type { ReplayCursor, ReplayRecord, ReplaySelection, StoreParams } from "../store.js";
import { json, parse, type Query, Rollback, type Row } from "./db.js";
import { appendAudit } from "./history.js";

const record = (r: Row): ReplayRecord => toReplay(r, parse);

export function createReplay(q: Query, p: StoreParams<"replayCreate">): ReplayRecord {
  const r = p.replay;
  const total = "executionIds" in r.selection ? r.selection.executionIds.length : null;
  const row = q(
    `INSERT INTO dead_letter_replays (id, tenant_id, selection, rate, actor, state, total, next_at, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, 'RUNNING', ?, ?, ?, ?) RETURNING *`,
  ).get(r.replayId, r.tenantId, json(r.selection), r.ratePerSecond, r.actor, total, r.createdAt, r.createdAt, r.createdAt) as Row;
  appendAudit(q, p.audit);
  return record(row);
}

export function getReplay(q: Query, p: StoreParams<"replayGet">): ReplayRecord | null {
  const row = q("SELECT * FROM dead_letter_replays WHERE id = ? AND (? IS NULL OR tenant_id = ?)").get(
    p.replayId,
    p.tenantId ?? null,
    p.tenantId ?? null,
  ) as Row | undefined;
  return row ? record(row) : null;
}

export function listReplays(q: Query, p: StoreParams<"replayList">): ReplayRecord[] {
  const cursor = p.after ? "AND (created_at < @at OR (created_at = @at AND id < @id))" : "";
  const found = q(`SELECT * FROM dead_letter_replays WHERE tenant_id = @tenant ${cursor} ORDER BY created_at DESC, id DESC LIMIT @limit`).all({
    tenant: p.tenantId,
    at: p.after?.createdAt ?? null,
    id: p.after?.replayId ?? null,
    limit: p.limit,
  }) as Row[];
  return found.map((r) => record(r));
}

export function claimReplays(q: Query, p: StoreParams<"replayClaim">, now: number): ReplayRecord[] {
  const found = q(
    `UPDATE dead_letter_replays SET owner = @owner, lease_until = @until
     WHERE id IN (SELECT id FROM dead_letter_replays WHERE state = 'RUNNING'
                    AND (owner IS NULL OR owner = @owner OR lease_until < @now) LIMIT @limit)
       AND state = 'RUNNING' AND (owner IS NULL OR owner = @owner OR lease_until < @now)
     RETURNING *`,
  ).all({ owner: p.owner, until: now + p.leaseMs, now, limit: p.limit }) as Row[];
  return found.map((r) => record(r));
}

export function releaseReplays(q: Query, p: StoreParams<"replayRelease">): void {
  q("UPDATE dead_letter_replays SET owner = NULL, lease_until = NULL WHERE owner = @owner AND state = 'RUNNING'").run({ owner: p.owner });
}

export function stepReplay(q: Query, p: StoreParams<"replayStep">, now: number) {
  const fenced = q(
    `UPDATE dead_letter_replays SET lease_until = @until
     WHERE id = @id AND owner = @owner AND state = 'RUNNING' AND lease_until >= @now RETURNING *`,
  ).get({ id: p.replayId, owner: p.owner, until: now + p.leaseMs, now }) as Row | undefined;
  if (!fenced) return null;
  const replay = record(fenced);
  let candidates: string[];
  let cursor: ReplayCursor | null;
  let done: boolean;
  let skipped = 0;
  const byIds = nextIds(replay, p.limit);
  if (byIds) {
    const dead = q("SELECT id FROM executions WHERE id = ? AND tenant_id = ? AND state = 'DEAD'");
    candidates = byIds.ids.filter((id) => dead.get(id, replay.tenantId) !== undefined);
    skipped = byIds.ids.length - candidates.length;
    ({ cursor, done } = byIds);
  } else {
    const f = (replay.selection as Extract<ReplaySelection, { filter: unknown }>).filter;
    const after = replay.cursor && "deadAt" in replay.cursor ? replay.cursor : null;
    const found = q(
      `SELECT id, dead_at FROM executions
       WHERE tenant_id = @tenant AND state = 'DEAD' AND dead_at <= @before AND (@afterTime IS NULL OR dead_at >= @afterTime)
         AND (@cursorAt IS NULL OR dead_at > @cursorAt OR (dead_at = @cursorAt AND id > @cursorId))
         AND (@pool IS NULL OR pool = @pool) AND (@cls IS NULL OR last_error ->> '$.class' = @cls)
       ORDER BY dead_at, id LIMIT @limit`,
    ).all({
      tenant: replay.tenantId,
      before: f.deadBefore,
      afterTime: f.deadAfter ?? null,
      cursorAt: after?.deadAt ?? null,
      cursorId: after?.executionId ?? null,
      pool: f.pool ?? null,
      cls: f.errorClass ?? null,
      limit: p.limit,
    }) as Row[];
    candidates = found.map((r) => r.id as string);
    const last = found[found.length - 1];
    cursor = last ? { deadAt: last.dead_at as number, executionId: last.id as string } : replay.cursor;
    done = found.length < p.limit;
  }
  const slots = replaySlots(replay, p.at, candidates.length);
  const revive = q(
    `UPDATE executions SET state = 'READY', ready_at = ?, dead_at = NULL, finished_at = NULL, attempt_base = attempt
     WHERE id = ? AND tenant_id = ? AND state = 'DEAD' RETURNING job_id, pool`,
  );
  const replayed: { executionId: string; pool: string; readyAt: number }[] = [];
  candidates.forEach((id, i) => {
    const readyAt = slots.readyAt[i]!;
    const row = revive.get(readyAt, id, replay.tenantId) as Row | undefined;
    if (!row) {
      skipped++;
      return;
    }
    replayed.push({ executionId: id, pool: row.pool as string, readyAt });
  });
  const updated = q(
    `UPDATE dead_letter_replays SET replayed = replayed + @replayed, skipped = skipped + @skipped, cursor = @cursor,
       next_at = @nextAt, updated_at = @at, state = @state, finished_at = @finished,
       owner = CASE WHEN @state = 'RUNNING' THEN owner END, lease_until = CASE WHEN @state = 'RUNNING' THEN lease_until END
     WHERE id = @id AND owner = @owner AND state = 'RUNNING' AND lease_until = @until RETURNING *`,
  ).get({
    id: replay.replayId,
    owner: p.owner,
    until: now + p.leaseMs,
    replayed: replayed.length,
    skipped,
    cursor: json(cursor),
    nextAt: slots.nextAt,
    at: p.at,
    state: done ? "DONE" : "RUNNING",
    finished: done ? p.at : null,
  }) as Row | undefined;
  // The lease this step renewed is gone (a cancel, or another owner's claim, committed since): the step is undone, as one fenced out at its start.
  if (!updated) throw new Rollback(null);
  return { replay: record(updated), replayed };
}

export function cancelReplay(q: Query, p: StoreParams<"replayCancel">) {
  const changed = q(
    `UPDATE dead_letter_replays SET state = 'CANCELLED', finished_at = @now, updated_at = @now, owner = NULL, lease_until = NULL
     WHERE id = @id AND (@tenant IS NULL OR tenant_id = @tenant) AND state = 'RUNNING' RETURNING *`,
  ).get({ id: p.replayId, tenant: p.tenantId ?? null, now: p.now }) as Row | undefined;
  if (changed) {
    appendAudit(q, p.audit);
    return { replay: record(changed), changed: true };
  }
  const row = q("SELECT * FROM dead_letter_replays WHERE id = ? AND (? IS NULL OR tenant_id = ?)").get(
    p.replayId,
    p.tenantId ?? null,
    p.tenantId ?? null,
  ) as Row | undefined;
  return row ? { replay: record(row), changed: false } : null;
}
