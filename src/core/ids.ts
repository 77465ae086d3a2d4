// Ids: URL-safe, time-sortable (so "newest first" is an index order), and
// deterministic where a retry must land on the same row.

import { randomBytes } from "node:crypto";

export const SHARD_COUNT = 256;

const ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz";

/** 10 chars of time (base36 ms, good until year 5188) + 12 random base36 chars. */
export function newId(nowMs: number): string {
  const time = nowMs.toString(36).padStart(10, "0");
  const bytes = randomBytes(12);
  let rand = "";
  for (const b of bytes) rand += ALPHABET[b % 36];
  return time + rand;
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

const ID_PATTERN = /^[0-9a-z]{22}$/;
const EXECUTION_ID_PATTERN = /^[0-9a-z]{22}-[0-9a-z]{1,11}$/;

export function isJobId(value: string): boolean {
  return ID_PATTERN.test(value);
}

export function isExecutionId(value: string): boolean {
  return EXECUTION_ID_PATTERN.test(value);
}
