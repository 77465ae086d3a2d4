// Bulk dead-letter replays on PostgreSQL (store/replays.ts has the shared
// arithmetic). A step runs in one transaction: the lease's compare-and-set,
// the selected dead letters locked (FOR UPDATE) in order, each revived by a
// compare-and-set on DEAD, the progress written.

import type pg from "pg";
import { nextIds, replaySlots, toReplay } from "../replays.js";
import { jsonb } from "../rows.js";
import type { ReplayCursor, ReplayRecord, ReplaySelection, StoreParams } from "../store.js";
import { type Db, executionKey, json, nowOr, one, type Row, rows } from "./db.js";
import { appendAudit } from "./history.js";

const record = (r: Row): ReplayRecord => toReplay(r, jsonb);

export async function createReplay(c: pg.PoolClient, p: StoreParams<"replayCreate">): Promise<ReplayRecord> {
  const r = p.replay;
  const total = "executionIds" in r.selection ? r.selection.executionIds.length : null;
  const row = await one(
    c,
    `INSERT INTO dead_letter_replays (id, tenant_id, selection, rate, actor, state, total, next_at, created_at, updated_at)
     VALUES ($1, $2, $3::jsonb, $4, $5, 'RUNNING', $6, $7::double precision, $8::bigint, $8::bigint) RETURNING *`,
    [r.replayId, r.tenantId, json(r.selection), r.ratePerSecond, r.actor, total, r.createdAt, r.createdAt],
  );
  await appendAudit(c, p.audit);
  return record(row!);
}

export async function getReplay(db: Db, p: StoreParams<"replayGet">): Promise<ReplayRecord | null> {
  const row = await one(db, "SELECT * FROM dead_letter_replays WHERE id = $1 AND ($2::text IS NULL OR tenant_id = $2)", [
    p.replayId,
    p.tenantId ?? null,
  ]);
  return row ? record(row) : null;
}

export async function listReplays(db: Db, p: StoreParams<"replayList">): Promise<ReplayRecord[]> {
  const cursor = p.after ? "AND (created_at, id) < ($3::bigint, $4::text)" : "";
  const found = await rows(db, `SELECT * FROM dead_letter_replays WHERE tenant_id = $1 ${cursor} ORDER BY created_at DESC, id DESC LIMIT $2`, [
    p.tenantId,
    p.limit,
    ...(p.after ? [p.after.createdAt, p.after.replayId] : []),
  ]);
  return found.map(record);
}

export async function claimReplays(db: Db, p: StoreParams<"replayClaim">): Promise<ReplayRecord[]> {
  const found = await rows(
    db,
    `WITH t AS (SELECT ${nowOr("$3")} AS now),
     free AS (
       SELECT d.id FROM dead_letter_replays d, t WHERE d.state = 'RUNNING' AND (d.owner IS NULL OR d.owner = $1 OR d.lease_until < t.now)
       LIMIT $4 FOR UPDATE OF d SKIP LOCKED
     )
     UPDATE dead_letter_replays d SET owner = $1, lease_until = t.now + $2::bigint
     FROM free, t WHERE d.id = free.id AND d.state = 'RUNNING' AND (d.owner IS NULL OR d.owner = $1 OR d.lease_until < t.now)
     RETURNING d.*`,
    [p.owner, p.leaseMs, p.now ?? null, p.limit],
  );
  return found.map(record);
}

export async function releaseReplays(db: Db, p: StoreParams<"replayRelease">): Promise<void> {
  await rows(db, "UPDATE dead_letter_replays SET owner = NULL, lease_until = NULL WHERE owner = $1 AND state = 'RUNNING'", [p.owner]);
}

export async function stepReplay(c: pg.PoolClient, p: StoreParams<"replayStep">) {
  const fenced = await one(
    c,
    `WITH t AS (SELECT ${nowOr("$3")} AS now)
     UPDATE dead_letter_replays d SET lease_until = t.now + $4::bigint FROM t
     WHERE d.id = $1 AND d.owner = $2 AND d.state = 'RUNNING' AND d.lease_until >= t.now RETURNING d.*`,
    [p.replayId, p.owner, p.now ?? null, p.leaseMs],
  );
  if (!fenced) return null;
  const replay = record(fenced);
  let candidates: { id: string; jobId: string; scheduledFor: number }[];
  let cursor: ReplayCursor | null;
  let done: boolean;
  let skipped = 0;
  const byIds = nextIds(replay, p.limit);
  if (byIds) {
    const keys = byIds.ids.flatMap((id) => {
      const key = executionKey(id);
      return key ? [{ id, ...key }] : [];
    });
    const dead = await rows(
      c,
      `SELECT e.id FROM executions e JOIN unnest($1::text[], $2::bigint[]) AS x(job_id, scheduled_for)
         ON e.job_id = x.job_id AND e.scheduled_for = x.scheduled_for
       WHERE e.tenant_id = $3 AND e.state = 'DEAD' FOR UPDATE OF e`,
      [keys.map((k) => k.jobId), keys.map((k) => k.scheduledFor), replay.tenantId],
    );
    const still = new Set(dead.map((r) => r.id as string));
    // In the selection's order: the slots follow it.
    candidates = keys.filter((k) => still.has(k.id));
    skipped = byIds.ids.length - candidates.length;
    ({ cursor, done } = byIds);
  } else {
    const f = (replay.selection as Extract<ReplaySelection, { filter: unknown }>).filter;
    const after = replay.cursor && "deadAt" in replay.cursor ? replay.cursor : null;
    const found = await rows(
      c,
      `SELECT id, job_id, scheduled_for, dead_at FROM executions
       WHERE tenant_id = $1 AND state = 'DEAD' AND dead_at <= $2 AND ($3::bigint IS NULL OR dead_at >= $3)
         AND ($4::bigint IS NULL OR (dead_at, id) > ($4::bigint, $5::text))
         AND ($6::text IS NULL OR pool = $6) AND ($7::text IS NULL OR last_error ->> 'class' = $7)
       ORDER BY dead_at, id LIMIT $8 FOR UPDATE`,
      [
        replay.tenantId,
        f.deadBefore,
        f.deadAfter ?? null,
        after?.deadAt ?? null,
        after?.executionId ?? null,
        f.pool ?? null,
        f.errorClass ?? null,
        p.limit,
      ],
    );
    candidates = found.map((r) => ({ id: r.id as string, jobId: r.job_id as string, scheduledFor: Number(r.scheduled_for) }));
    const last = found[found.length - 1];
    cursor = last ? { deadAt: Number(last.dead_at), executionId: last.id as string } : replay.cursor;
    done = found.length < p.limit;
  }
  const slots = replaySlots(replay, p.at, candidates.length);
  const revived =
    candidates.length === 0
      ? []
      : await rows(
          c,
          `UPDATE executions e SET state = 'READY', ready_at = x.ready_at, dead_at = NULL, finished_at = NULL, attempt_base = e.attempt
           FROM unnest($1::text[], $2::bigint[], $3::bigint[]) AS x(job_id, scheduled_for, ready_at)
           WHERE e.job_id = x.job_id AND e.scheduled_for = x.scheduled_for AND e.tenant_id = $4 AND e.state = 'DEAD'
           RETURNING e.id, e.job_id, e.pool, e.ready_at`,
          [candidates.map((k) => k.jobId), candidates.map((k) => k.scheduledFor), slots.readyAt, replay.tenantId],
        );
  skipped += candidates.length - revived.length;
  const state = done ? "DONE" : "RUNNING";
  const updated = await one(
    c,
    `UPDATE dead_letter_replays SET replayed = replayed + $2, skipped = skipped + $3, cursor = $4::jsonb, next_at = $5::double precision, updated_at = $6::bigint,
       state = $7::text, finished_at = $8::bigint, owner = CASE WHEN $7 = 'RUNNING' THEN owner END, lease_until = CASE WHEN $7 = 'RUNNING' THEN lease_until END
     WHERE id = $1 RETURNING *`,
    [replay.replayId, revived.length, skipped, json(cursor), slots.nextAt, p.at, state, done ? p.at : null],
  );
  const order = new Map(candidates.map((k, i) => [k.id, i]));
  const replayed = revived
    .map((r) => ({ executionId: r.id as string, pool: r.pool as string, readyAt: Number(r.ready_at) }))
    .sort((a, b) => order.get(a.executionId)! - order.get(b.executionId)!);
  return { replay: record(updated!), replayed };
}

export async function cancelReplay(c: pg.PoolClient, p: StoreParams<"replayCancel">) {
  const changed = await one(
    c,
    `UPDATE dead_letter_replays SET state = 'CANCELLED', finished_at = $3::bigint, updated_at = $3::bigint, owner = NULL, lease_until = NULL
     WHERE id = $1 AND ($2::text IS NULL OR tenant_id = $2) AND state = 'RUNNING' RETURNING *`,
    [p.replayId, p.tenantId ?? null, p.now],
  );
  if (changed) {
    await appendAudit(c, p.audit);
    return { replay: record(changed), changed: true };
  }
  const found = await getReplay(c, p);
  return found ? { replay: found, changed: false } : null;
}
