// Ids: URL-safe, time-sortable (so "newest first" is an index order), and
// deterministic where a retry must land on the same row.

import { randomBytes } from "node:crypto";

export const SHARD_COUNT = 256;

const ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz";

// One randomBytes call per 4 KiB of ids: a call per id costs more than the rest of creating a job.
let pool = Buffer.alloc(0);
let offset = 0;

/** 10 chars of time (base36 ms, good until year 5188) + 12 random base36 chars. */
export function newId(nowMs: number): string {
  if (offset + 12 > pool.length) {
    pool = randomBytes(4096);
    offset = 0;
  }
  let rand = "";
  for (let i = 0; i < 12; i++) rand += ALPHABET[pool[offset++]! % 36];
  return nowMs.toString(36).padStart(10, "0") + rand;
}

/** FNV-1a over the id's UTF-16 units; stable across processes and stores. */
export function shardOf(jobId: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < jobId.length; i++) {
    h ^= jobId.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0) % SHARD_COUNT;
}

/**
 * The execution id is a function of (jobId, scheduledFor), so dispatching the
 * same occurrence twice (a crash between load and commit, two owners during a
 * failover) names the same row and the second insert is a no-op.
 */
export function executionIdFor(jobId: string, scheduledFor: number): string {
  return `${jobId}-${scheduledFor.toString(36)}`;
}

/** The job of an execution id (executionIdFor's inverse): the part before the dash. */
export function jobIdOf(executionId: string): string {
  const dash = executionId.indexOf("-");
  return dash < 0 ? executionId : executionId.slice(0, dash);
}

const ID_PATTERN = /^[0-9a-z]{22}$/;
const EXECUTION_ID_PATTERN = /^[0-9a-z]{22}-[0-9a-z]{1,11}$/;

export function isJobId(value: string): boolean {
  return ID_PATTERN.test(value);
}

export function isExecutionId(value: string): boolean {
  return EXECUTION_ID_PATTERN.test(value);
}
