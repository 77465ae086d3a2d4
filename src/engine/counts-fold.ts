// Keeps the store's pool counters short (store.ts executionCountsFold): on
// PostgreSQL every write appends deltas that each /v1/stats read sums until
// they are folded, so every node folds every few seconds (one at a time, by
// the store's lock); on SQLite it drops counters left at zero.

import type { Clock } from "../core/clock.js";
import type { Store } from "../store/store.js";
import type { EngineEvents } from "./events.js";
import { Periodic } from "./periodic.js";

export const COUNTS_FOLD_INTERVAL_MS = 5_000;

export function countsFold(o: { store: Store; clock: Clock; events: EngineEvents }): Periodic<void> {
  return new Periodic(o.clock, COUNTS_FOLD_INTERVAL_MS, () =>
    o.store.executionCountsFold().catch((error) => o.events.emit("error", { where: "counts-fold", error })),
  );
}
