// The store conformance suite: one set of tests every driver must pass
// (River's riverdrivertest, Oban's engine tests over [Basic, Lite]). A driver's
// test file calls storeContract(name, open, openPair) with an `open` that
// returns an already-migrated, empty store, isolated from every other call (a
// new SQLite file, a new PostgreSQL schema), and an `openPair` that returns
// two handles (connections, as two nodes would hold) on one such database,
// for the races at the end. Each test opens its own store and closes it.
//
// The suite knows only the Store port (src/store/store.ts): every assertion
// is a sentence of a doc comment there, or of docs/api.md where the port
// defers to it. Time is never the wall clock: tests pass fixed `now` values
// around T0 (support.ts).
//
// One file per section of the port, run in this order; support.ts holds what
// the sections share. It is test code, outside src/: not built, not published.
// No file here is a *.test.ts: the suite runs through the drivers' tests.

import { describe, test } from "node:test";

import type { Store } from "../../src/store/store.js";
import { lifecycleContract } from "./lifecycle.js";
import { jobsContract } from "./jobs.js";
import { dueIndexContract } from "./due-index.js";
import { dispatchContract } from "./dispatch.js";
import { executionsContract } from "./executions.js";
import { leasesContract } from "./leases.js";
import { tenantsContract } from "./tenants.js";
import { leaseAcksContract } from "./leases-acks.js";
import { leaseFailuresContract } from "./leases-failures.js";
import { oneOffEndContract } from "./one-off-end.js";
import { historyContract } from "./history.js";
import { replaysContract } from "./replays.js";
import { clusterContract } from "./cluster.js";
import { statsContract } from "./stats.js";
import { keysContract } from "./keys.js";
import { fencingContract } from "./fencing.js";
import { rulesContract } from "./rules.js";
import { retentionContract } from "./retention.js";
import { blobsContract } from "./blobs.js";
import { racesContract } from "./races.js";
import { signalsContract } from "./signals.js";
import type { ContractTests } from "./support.js";

export function storeContract(name: string, open: () => Promise<Store>, openPair: () => Promise<[Store, Store]>): void {
  /** A test with its own fresh store, closed whatever happens. */
  function storeTest(title: string, fn: (store: Store) => Promise<void>): void {
    test(title, async () => {
      const store = await open();
      try {
        await fn(store);
      } finally {
        await store.close();
      }
    });
  }

  /** A test with two handles on one fresh database, both closed whatever happens. */
  function pairTest(title: string, fn: (a: Store, b: Store) => Promise<void>): void {
    test(title, async () => {
      const [a, b] = await openPair();
      try {
        await fn(a, b);
      } finally {
        await Promise.all([a.close(), b.close()]);
      }
    });
  }

  const tests: ContractTests = { storeTest, pairTest };
  describe(`store contract: ${name}`, () => {
    lifecycleContract(tests);
    jobsContract(tests);
    dueIndexContract(tests);
    dispatchContract(tests);
    executionsContract(tests);
    leasesContract(tests);
    tenantsContract(tests);
    leaseAcksContract(tests);
    leaseFailuresContract(tests);
    oneOffEndContract(tests);
    historyContract(tests);
    replaysContract(tests);
    clusterContract(tests);
    statsContract(tests);
    keysContract(tests);
    fencingContract(tests);
    rulesContract(tests);
    retentionContract(tests);
    blobsContract(tests);
    racesContract(tests);
    signalsContract(tests);
  });
}
